package remote_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/store/truth"
)

// lateQueries are asked by a monitor that joins a running subject: entity
// relations (primed with what is alive when it joins), events, traced
// intervals and aggregates over them.
var lateQueries = []query.Source{
	{Name: "process-states", Text: `range of p is Process retrieve (p.Process, p.State)`},
	{Name: "count-by-state", Text: `range of p is Process retrieve (p.State, N = count(p.Process by p.State))`},
	{Name: "all-sends", Text: `range of s is SendMessage retrieve (s.Process, s.Mailbox)`},
	{Name: "sends-so-far", Text: `range of s is SendMessage retrieve (Sends = count(s.Process for ever))`},
	{Name: "waits", Text: `range of w is Waiting retrieve (w.Process, w.Mailbox)`},
}

// TestLiveLateJoinMatchesRestrictedTruth: a monitor that joins a subject
// already running answers over what it observed — from when the
// resident carried out its commands — exactly as the complete history
// restricted to that observation answers (remote.Restrict), aggregates
// included: never 1 process in a state over a span where the truth has 3.
func TestLiveLateJoinMatchesRestrictedTruth(t *testing.T) {
	cat := demoCatalog(t)
	prog, err := query.Compile(cat, lateQueries, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := demo.DefaultConfig(3)
	clock := demo.NewClock(cfg.Scale)
	rec := truth.New(cat, 0, 0)
	res := resident.New(ossensors.Spec(), demo.Options(clock, rec))
	h := res.Hello()
	rec.SetClock(h.MonoBase, h.WallBase)
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	ran := make(chan int64)
	go func() {
		demo.New(ossensors.New(res), cfg).Run(ctx)
		stop := clock.Stop()
		res.Close()
		ran <- stop
	}()
	time.Sleep(250 * time.Millisecond) // the subject runs unwatched
	got, st, err := remote.RunLive(context.Background(), prog, []wire.Conn{res.Local()}, remote.LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stop := <-ran
	if st.Start <= 0 {
		t.Fatalf("observed from %d: the monitor joined late", st.Start)
	}
	want, _, err := prog.RunHistory(remote.Restrict(rec.History(stop), st.Start))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := renderTables(got), renderTables(want); g != w {
		dir, _ := os.MkdirTemp("", "tqmon-late-")
		os.WriteFile(filepath.Join(dir, "live.txt"), []byte(g), 0o644)
		os.WriteFile(filepath.Join(dir, "truth.txt"), []byte(w), 0o644)
		t.Fatalf("late live results differ from the truth restricted to the observation from %d (diff %s/live.txt %s/truth.txt)", st.Start, dir, dir)
	}
	// And the unrestricted truth says more before the monitor joined.
	all, _, err := prog.RunHistory(rec.History(stop))
	if err != nil {
		t.Fatal(err)
	}
	if renderTables(all) == renderTables(got) {
		t.Fatal("the subject did nothing before the monitor joined: the test shows nothing")
	}
	for _, o := range st.Observed {
		if o.From != st.Start || o.Lost() != 0 {
			t.Errorf("observation %+v; want from %d, nothing lost", o, st.Start)
		}
	}
	if st.Incomplete() {
		t.Errorf("incomplete: %v", st.Err())
	}
}

// paused stops renewing its lease after the first renewals and stops
// reading: a monitor stopped (SIGSTOP) past its lease, in process.
type paused struct {
	wire.Conn
	stop atomic.Bool
	hold chan struct{}
}

func (c *paused) Send(cmd *wire.Command) error {
	if cmd.Kind == wire.CLease && c.stop.Load() {
		return nil
	}
	return c.Conn.Send(cmd)
}

func (c *paused) Recv() (*wire.Batch, error) {
	if c.stop.Load() {
		<-c.hold
	}
	return c.Conn.Recv()
}

// TestLivePausedMonitorIsIncomplete: a monitor that stops renewing and
// reading past its lease loses its session; the run ends with a
// *SessionLostError (ErrIncomplete), saying since when nothing was
// observed, and its results so far — never a quiet end.
func TestLivePausedMonitorIsIncomplete(t *testing.T) {
	cat := demoCatalog(t)
	prog, err := query.Compile(cat, lateQueries[:3], check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := demo.DefaultConfig(2)
	clock := demo.NewClock(cfg.Scale)
	res := resident.New(ossensors.Spec(), demo.Options(clock, nil))
	defer res.Close()
	conn := &paused{Conn: res.Local(), hold: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	go demo.New(ossensors.New(res), cfg).Run(ctx)
	const lease = 300 * time.Millisecond
	go func() {
		time.Sleep(200 * time.Millisecond)
		conn.stop.Store(true)
		time.Sleep(3 * lease) // paused past its lease
		close(conn.hold)
	}()
	rs, st, err := remote.RunLive(ctx, prog, []wire.Conn{conn}, remote.LiveOptions{Lease: lease})
	var lost *remote.SessionLostError
	if !errors.As(err, &lost) || !errors.Is(err, remote.ErrIncomplete) || !errors.Is(err, resident.ErrLeaseExpired) {
		t.Fatalf("run ended with %v; want a lost session (lease expired), incomplete", err)
	}
	if st.SessionLost == nil || !st.Incomplete() || st.Err() == nil {
		t.Errorf("stats do not say the run is incomplete: %+v", st)
	}
	if lost.Since < st.Start || lost.Since > st.End+1 {
		t.Errorf("lost since %d, outside the observation [%d, %d]", lost.Since, st.Start, st.End)
	}
	if len(rs) != len(lateQueries[:3]) || len(rs[0].Table.Rows) == 0 {
		t.Errorf("no results so far: %d tables", len(rs))
	}
	t.Logf("%v", err)
}
