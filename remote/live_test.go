package remote_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor"
	"github.com/tqmon/tqmon/store/truth"
)

// liveQueries are run live against the demo subject and over its ground
// truth: the paper's two queries and more, exercising every α variant and
// the resident-side enabling (whole types, constants, triggers, samplers).
var liveQueries = []struct{ name, text string }{
	{"ResumedbyP1", `range of S is SendMessage
range of W is Waiting
retrieve ResumedbyP1 (Process = W.Process)
valid at end of W
where S.Mailbox = W.Mailbox and S.Process = "P1"
when S precede end of W`},
	{"RunningOnEvery10Seconds", `range of RO is RunningOn
range of C is Clock[10]
retrieve RunningOnEvery10Seconds (Process = RO.Process, Processor = RO.Processor)
when C overlap RO`},
	{"process-states", `range of p is Process retrieve (p.Process, p.State)`},
	{"all-sends", `range of s is SendMessage retrieve (s.Process, s.Mailbox)`},
	{"waits", `range of w is Waiting retrieve (w.Process, w.Mailbox)`},
	{"sends-of-P2", `range of s is SendMessage retrieve (s.Mailbox) where s.Process = "P2"`},
	{"waits-on-M3", `range of w is Waiting retrieve (w.Process) valid at end of w where w.Mailbox = "M3"`},
	{"waiting-state-join", `range of w is Waiting
range of p is Process
retrieve (w.Process, p.State) where w.Process = p.Process`},
	{"sender-and-waiter", `range of s is SendMessage
range of w is Waiting
retrieve (Sender = s.Process, Waiter = w.Process) valid at end of w where s.Mailbox = w.Mailbox when s precede end of w`},
	{"P1-running-sampled", `range of r is RunningOn
range of c is Clock[5]
retrieve (r.Processor) valid at c where r.Process = "P1" when c overlap r`},
	{"waiting-at-ticks", `range of p is Process
range of c is Clock[20]
retrieve (p.Process) valid at c where p.State = "Waiting" when c overlap p`},
	{"sends-after-unblock", `range of w is Waiting
retrieve into Unblocked (P = w.Process) valid at end of w
range of u is Unblocked
range of s is SendMessage
retrieve (s.Process, s.Mailbox) valid at s where u.P = s.Process when u precede s`},
}

func demoCatalog(t testing.TB) *algebra.Catalog {
	f, err := sdl.Parse("os.sdl", ossensors.SDL)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := sensor.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func renderTables(rs []remote.Result) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s:\n", r.Stmt.Name)
		for _, row := range r.Table.Rows {
			for _, v := range row.Vals {
				b.WriteString(v.Format(algebra.TimeNS) + ",")
			}
			fmt.Fprintf(&b, "%s,%s\n", algebra.FormatTime(row.From, algebra.TimeNS), algebra.FormatTime(row.To, algebra.TimeNS))
		}
	}
	return b.String()
}

// runDemo runs the demo subject with the program live, in one process, and
// returns the live results, stats and the ground truth.
func runDemo(t *testing.T, prog *remote.Program, cfg demo.Config, d time.Duration) ([]remote.Result, remote.LiveStats, *algebra.History) {
	t.Helper()
	cat := demoCatalog(t)
	clock := demo.NewClock(cfg.Scale)
	rec := truth.New(cat, 0, 0)
	res := resident.New(ossensors.Spec(), demo.Options(clock, rec))
	h := res.Hello()
	rec.SetClock(h.MonoBase, h.WallBase)
	ready := make(chan struct{})
	type out struct {
		rs  []remote.Result
		st  remote.LiveStats
		err error
	}
	done := make(chan out, 1)
	go func() {
		rs, st, err := prog.RunLive(context.Background(), []wire.Conn{res.Local()}, remote.LiveOptions{Ready: func() { close(ready) }})
		done <- out{rs, st, err}
	}()
	select {
	case <-ready:
	case o := <-done:
		t.Fatalf("monitor ended before starting: %v", o.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	demo.New(ossensors.New(res), cfg).Run(ctx)
	stop := clock.Stop()
	res.Close()
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	return o.rs, o.st, rec.History(stop)
}

// TestLiveMatchesTruth: live results from the demo equal the same queries
// over the ground truth the demo recorded, for several seeds.
func TestLiveMatchesTruth(t *testing.T) {
	cat := demoCatalog(t)
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			var srcs []remote.Source
			for _, q := range liveQueries {
				srcs = append(srcs, remote.Source{Name: q.name, Text: q.text})
			}
			prog, err := remote.Compile(cat, srcs, check.Options{})
			if err != nil {
				t.Fatal(err)
			}
			cfg := demo.DefaultConfig(seed)
			got, st, h := runDemo(t, prog, cfg, 400*time.Millisecond)
			want, _, err := prog.RunHistory(h)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := renderTables(got), renderTables(want); g != w {
				dir, _ := os.MkdirTemp("", "tqmon-live-")
				os.WriteFile(filepath.Join(dir, "live.txt"), []byte(g), 0o644)
				os.WriteFile(filepath.Join(dir, "truth.txt"), []byte(w), 0o644)
				t.Fatalf("live results differ from the ground truth's (diff %s/live.txt %s/truth.txt)", dir, dir)
			}
			rows := 0
			for _, r := range want {
				rows += len(r.Table.Rows)
			}
			if rows == 0 {
				t.Fatal("no results at all: the run was too short")
			}
			t.Logf("%d result rows; packets %v", rows, st.Packets)
		})
	}
}
