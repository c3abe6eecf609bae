package play

import (
	"context"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/store/history"
)

const sec = int64(1e9)

// sliceSource yields fixed elements.
type sliceSource struct {
	items []item
}

func (s *sliceSource) Next() (string, stream.Elem, bool, error) {
	if len(s.items) == 0 {
		return "", stream.Elem{}, false, nil
	}
	it := s.items[0]
	s.items = s.items[1:]
	return it.rel, it.e, true, nil
}

func events(times ...int64) *sliceSource {
	s := &sliceSource{}
	for _, t := range times {
		s.items = append(s.items, item{"E", stream.Elem{Kind: stream.Event, T: t, Rec: &stream.Rec{From: t}}})
	}
	return s
}

// driver calls Next in a goroutine, as RunSource would, and records what
// comes out.
type driver struct {
	t     *testing.T
	p     *Player
	clock *FakeClock
	out   chan item
	done  chan error
	beats []algebra.Time
	got   []algebra.Time
}

func start(t *testing.T, src stream.Source, o Options) *driver {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clock := NewFakeClock(time.Unix(100, 0))
	o.Clock = clock
	d := &driver{t: t, p: NewPlayer(ctx, src, o), clock: clock, out: make(chan item, 1000), done: make(chan error, 1)}
	go func() {
		for {
			rel, e, ok, err := d.p.Next()
			if err != nil || !ok {
				d.done <- err
				close(d.out)
				return
			}
			d.out <- item{rel, e}
		}
	}()
	d.settle()
	return d
}

// settle waits until the player waits, then takes what it released.
func (d *driver) settle() {
	d.t.Helper()
	select {
	case <-d.p.Waiting():
	case err := <-d.done:
		d.done <- err
	case <-time.After(5 * time.Second):
		d.t.Fatal("player never waited")
	}
	for {
		select {
		case it, ok := <-d.out:
			if !ok {
				return
			}
			if it.rel == "" {
				if n := len(d.beats); n > 0 && it.e.T < d.beats[n-1] {
					d.t.Errorf("heartbeat %d after %d", it.e.T, d.beats[n-1])
				}
				d.beats = append(d.beats, it.e.T)
			} else {
				d.got = append(d.got, it.e.T)
			}
		default:
			return
		}
	}
}

func (d *driver) advance(real time.Duration) {
	d.clock.Advance(real)
	d.settle()
}

func (d *driver) expect(what string, want ...int64) {
	d.t.Helper()
	if len(d.got) != len(want) {
		d.t.Fatalf("%s: released %v, want %v", what, d.got, want)
	}
	for i := range want {
		if d.got[i] != want[i] {
			d.t.Fatalf("%s: released %v, want %v", what, d.got, want)
		}
	}
}

// Elements come out when the play position reaches them: at speed 2, the
// element at subject 10 s after 5 real seconds. Heartbeats follow the
// position, never passing the next element.
func TestPacing(t *testing.T) {
	zero := int64(0)
	d := start(t, events(10*sec, 20*sec, 20*sec, 30*sec), Options{Speed: 2, Start: &zero})
	d.expect("at 0")
	d.advance(4 * time.Second)
	d.expect("at 8 s")
	if last := d.beats[len(d.beats)-1]; last != 8*sec+1 {
		t.Errorf("heartbeat at %d, want just after 8 s", last)
	}
	d.advance(time.Second)
	d.expect("at 10 s", 10*sec)
	d.advance(5 * time.Second)
	d.expect("at 20 s", 10*sec, 20*sec, 20*sec)
	if got := d.p.Now(); got != 20*sec {
		t.Errorf("Now %d", got)
	}
	for _, b := range d.beats {
		if b > 30*sec {
			t.Errorf("heartbeat %d past the next element", b)
		}
	}
}

// Pause stops the position; Step jumps to the next element; faster and
// slower change the pace from where it is; Seek moves forward only; the
// end of the source ends play with the position kept.
func TestControls(t *testing.T) {
	d := start(t, events(10*sec, 20*sec, 40*sec, 80*sec), Options{Speed: 1})
	if got := d.p.Now(); got != 10*sec {
		t.Fatalf("starts at %d, want the first element", got)
	}
	d.expect("at the first", 10*sec)
	d.p.TogglePause()
	d.advance(time.Hour)
	if d.p.Now() != 10*sec || !d.p.State().Paused {
		t.Errorf("paused moved to %d", d.p.Now())
	}
	d.p.Step()
	d.settle()
	d.expect("stepped", 10*sec, 20*sec)
	if d.p.Now() != 20*sec {
		t.Errorf("step to %d", d.p.Now())
	}
	d.p.TogglePause()
	d.p.Faster()
	d.p.Faster() // 4x
	d.advance(5 * time.Second)
	if got := d.p.Now(); got != 40*sec {
		t.Errorf("after 5 s at 4x: %d", got)
	}
	d.expect("4x", 10*sec, 20*sec, 40*sec)
	d.p.Slower() // 2x
	if st := d.p.State(); st.Speed != 2 {
		t.Errorf("speed %g", st.Speed)
	}
	d.p.Seek(30 * sec) // back: ignored
	d.settle()
	if got := d.p.Now(); got != 40*sec {
		t.Errorf("seek back moved to %d", got)
	}
	d.p.Seek(100 * sec)
	d.settle()
	d.expect("sought past the end", 10*sec, 20*sec, 40*sec, 80*sec)
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no end")
	}
	if st := d.p.State(); !st.Ended || st.Now != 100*sec {
		t.Errorf("end state %+v", st)
	}
	d.clock.Advance(time.Hour)
	if got := d.p.Now(); got != 100*sec {
		t.Errorf("time runs on after the end: %d", got)
	}
}

// Cancelling the context ends a waiting Next.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	zero := int64(0)
	p := NewPlayer(ctx, events(sec), Options{Speed: 1, Start: &zero, Paused: true, Clock: NewFakeClock(time.Unix(0, 0))})
	errc := make(chan error, 1)
	go func() {
		for {
			if _, _, _, err := p.Next(); err != nil {
				errc <- err
				return
			}
		}
	}()
	<-p.Waiting()
	cancel()
	select {
	case err := <-errc:
		if err != context.Canceled {
			t.Errorf("err %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not end")
	}
}

// A history played through a player into a network gives the results the
// whole history gives at once: heartbeats only pass time. The source is
// in time order, Ends first at equal times, with every tuple.
func TestPlayHistoryIntoNetwork(t *testing.T) {
	h, err := history.Load("../../testdata/paper")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := query.Compile(h.Catalog, []query.Source{{Name: "q", Text: `
range of S is SendMessage
range of W is Waiting
retrieve ResumedbyP1 (Process = W.Process) valid at end of W
where S.Mailbox = W.Mailbox and S.Process = "P1" when S precede end of W
range of p is Process
retrieve (p.Process, p.State)
range of r is RunningOn
retrieve (r.Process, r.Processor)`}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := prog.RunHistory(h)
	if err != nil {
		t.Fatal(err)
	}
	src := HistorySource(h, nil)
	var prev stream.Elem
	n := 0
	for {
		_, e, ok, _ := src.Next()
		if !ok {
			break
		}
		if n > 0 && (e.T < prev.T || e.T == prev.T && prev.Kind != stream.End && e.Kind == stream.End) {
			t.Fatalf("out of order: %v after %v", e, prev)
		}
		prev = e
		n++
	}
	rows := 0
	for _, tb := range h.Tables {
		for _, r := range tb.Rows {
			rows++
			if !tb.Rel.IsEvent() && r.To != algebra.Forever {
				rows++
			}
		}
	}
	if n != rows {
		t.Errorf("%d elements, want %d", n, rows)
	}
	net, err := exec.Build(prog.Catalog, prog.Stmts, prog.Plans, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPlayer(context.Background(), HistorySource(h, nil), Options{Speed: MaxSpeed, Beat: time.Millisecond})
	if _, err := net.RunSource(p, h.Window); err != nil {
		t.Fatal(err)
	}
	for i, s := range net.Stmts {
		got, w := s.Result.Table(), want[i].Table
		if len(got.Rows) != len(w.Rows) {
			t.Fatalf("stmt %d: %d rows, want %d", i, len(got.Rows), len(w.Rows))
		}
		for j := range got.Rows {
			if algebra.CompareTuples(got.Rows[j].Vals, w.Rows[j].Vals) != 0 || got.Rows[j].From != w.Rows[j].From || got.Rows[j].To != w.Rows[j].To {
				t.Errorf("stmt %d row %d: %v, want %v", i, j, got.Rows[j], w.Rows[j])
			}
		}
	}
}

// While playing, heartbeats come at most once per beat, not as fast as the
// network can take them (the position moves on every call).
func TestHeartbeatsBounded(t *testing.T) {
	zero := int64(0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := NewPlayer(ctx, events(3600*sec), Options{Speed: 1, Start: &zero, Beat: 20 * time.Millisecond})
	beats := 0
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		rel, _, ok, err := p.Next()
		if err != nil || !ok || rel != "" {
			t.Fatalf("%q %v %v", rel, ok, err)
		}
		beats++
	}
	if beats > 300/20+3 {
		t.Errorf("%d heartbeats in 300 ms at one per 20 ms", beats)
	}
	if beats < 5 {
		t.Errorf("only %d heartbeats in 300 ms", beats)
	}
}
