package scene_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/draw"
	"github.com/tqmon/tqmon/display/scene"
	"github.com/tqmon/tqmon/display/spec"
	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/internal/testkit"
)

// The benchmark's system: 200 entities — 8 processors, 160 processes,
// 32 mailboxes — drawn with the paper's spec, flashes on sends.
const (
	benchCPUs  = 8
	benchProcs = 160
	benchBoxes = 32
)

const benchSpec = `display Processor as box label Processor order by Processor at left
display Process as circle label Process shade State (Running = 100%, Ready = 60%, Waiting = 30%, Done = 10%) order by Process at left
display Mailbox as oval label Mailbox order by Mailbox at right
display RunningOn as inside (Process, Processor)
display Waiting as arrow from Mailbox to Process
display SendMessage as arrow from Process to Mailbox
display SendMessage as flash Mailbox for 2s
time animationtrace decay 5s
show clock
`

// delta is one element for one relation.
type delta struct {
	rel *scene.Relation
	e   stream.Elem
}

// workload makes a scene and a stream of n deltas of a busy system: every
// millisecond of subject time a process changes state, starts or stops
// running on a processor, sends to a mailbox, or starts or stops waiting.
// tuples counts the tuples in it (Begins and Events; Ends close them).
func workload(b *testing.B, n int) (*scene.Scene, []delta, int) {
	sc := spec.NewSchema(testkit.PaperCatalog(b))
	sp, err := spec.Load("bench.display", benchSpec, sc)
	if err != nil {
		b.Fatal(err)
	}
	s := scene.New(sp)
	rel := func(name string) *scene.Relation { return s.Relation(sc[name]) }
	procR, cpuR, boxR := rel("Process"), rel("Processor"), rel("Mailbox")
	runR, sendR, waitR := rel("RunningOn"), rel("SendMessage"), rel("Waiting")
	states := sc["Process"].Attrs[1].Type.Enum
	var out []delta
	tuples := 0
	begin := func(r *scene.Relation, t algebra.Time, vals ...algebra.Value) *stream.Rec {
		rec := &stream.Rec{Vals: vals, From: t}
		out = append(out, delta{r, stream.Elem{Kind: stream.Begin, T: t, Rec: rec}})
		tuples++
		return rec
	}
	end := func(r *scene.Relation, rec *stream.Rec, t algebra.Time) {
		out = append(out, delta{r, stream.Elem{Kind: stream.End, T: t, Rec: rec}})
	}
	event := func(r *scene.Relation, t algebra.Time, vals ...algebra.Value) {
		out = append(out, delta{r, stream.Elem{Kind: stream.Event, T: t, Rec: &stream.Rec{Vals: vals, From: t}}})
		tuples++
	}
	proc := func(i int) algebra.Value { return algebra.Entity("P" + strconv.Itoa(i+1)) }
	cpu := func(i int) algebra.Value { return algebra.Entity(string(rune('A' + i))) }
	box := func(i int) algebra.Value { return algebra.Entity("M" + strconv.Itoa(i+1)) }
	for i := 0; i < benchCPUs; i++ {
		begin(cpuR, 0, cpu(i))
	}
	for i := 0; i < benchBoxes; i++ {
		begin(boxR, 0, box(i))
	}
	state := make([]*stream.Rec, benchProcs)
	for i := range state {
		v, _ := states.Value("Ready")
		state[i] = begin(procR, 0, proc(i), v)
	}
	running := make([]*stream.Rec, benchCPUs)
	waiting := map[int]*stream.Rec{}
	t := algebra.Time(0)
	for step := 0; len(out) < n; step++ {
		t += 1e6
		p := (step * 7) % benchProcs
		switch step % 5 {
		case 0: // a state change
			end(procR, state[p], t)
			v, _ := states.Value(states.Members[step/5%4])
			state[p] = begin(procR, t, proc(p), v)
		case 1: // a processor switches process
			c := step / 5 % benchCPUs
			if running[c] != nil {
				end(runR, running[c], t)
			}
			running[c] = begin(runR, t, proc(p), cpu(c))
		case 2, 3: // a send
			event(sendR, t, proc(p), box(step%benchBoxes))
		case 4: // a wait begins or ends
			if w := waiting[p]; w != nil {
				end(waitR, w, t)
				delete(waiting, p)
			} else {
				waiting[p] = begin(waitR, t, proc(p), box(p%benchBoxes))
			}
		}
	}
	return s, out[:n], tuples
}

// benchScreen is a 160×50 tcell simulation screen and the scene's area
// on it.
func benchScreen(b *testing.B) (tcell.SimulationScreen, term.Canvas, draw.Rect) {
	sim := tcell.NewSimulationScreen("UTF-8")
	if err := sim.Init(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(sim.Fini)
	sim.SetSize(160, 50)
	return sim, term.Canvas{Screen: sim}, draw.Rect{X: 0, Y: 1, W: 160, H: 48}
}

// BenchmarkDisplayAbsorb: how many derived tuples per second the display
// absorbs while drawing 30 frames a second of a 200-entity system on a
// 160×50 tcell screen: a producer goroutine (the update network) queues
// deltas in the inbox as fast as it is let; the display goroutine drains
// them and draws a frame every 1/30 s. Reported: tuples/s, deltas/s,
// frames drawn, and the mean time to drain and draw one frame. The
// "apply" case is the baseline: the same deltas applied without frames.
func BenchmarkDisplayAbsorb(b *testing.B) {
	for _, frames := range []bool{false, true} {
		name := "apply"
		if frames {
			name = "at30fps"
		}
		b.Run(name, func(b *testing.B) {
			s, deltas, _ := workload(b, max(b.N, 1000))
			deltas = deltas[:b.N]
			tuples := 0
			for _, d := range deltas {
				if d.e.Kind != stream.End {
					tuples++
				}
			}
			sim, canvas, area := benchScreen(b)
			inbox := scene.NewInbox()
			b.ResetTimer()
			start := time.Now()
			if !frames {
				for _, d := range deltas {
					d.rel.Push(d.e)
				}
				b.ReportMetric(float64(tuples)/time.Since(start).Seconds(), "tuples/s")
				return
			}
			var wg sync.WaitGroup
			wg.Add(1)
			done := make(chan struct{})
			go func() {
				defer wg.Done()
				for _, d := range deltas {
					inbox.Put(d.rel, d.e)
				}
				close(done)
			}()
			tick := time.NewTicker(time.Second / 30)
			defer tick.Stop()
			var now algebra.Time
			nframes := 0
			var frameTime time.Duration
			applied := 0
			for finished := false; !finished; {
				select {
				case <-done:
					finished = true
				case <-tick.C:
				}
				f0 := time.Now()
				applied += inbox.Drain()
				if applied > 0 {
					now = deltas[applied-1].e.T
				}
				s.Draw(canvas, area, now)
				sim.Show()
				frameTime += time.Since(f0)
				nframes++
			}
			applied += inbox.Drain()
			elapsed := time.Since(start)
			wg.Wait()
			if applied != len(deltas) {
				b.Fatalf("applied %d of %d", applied, len(deltas))
			}
			if b.N >= 1000 && s.Icons() != benchCPUs+benchProcs+benchBoxes {
				b.Fatalf("%d icons", s.Icons())
			}
			b.ReportMetric(float64(tuples)/elapsed.Seconds(), "tuples/s")
			b.ReportMetric(float64(len(deltas))/elapsed.Seconds(), "deltas/s")
			b.ReportMetric(float64(nframes), "frames")
			b.ReportMetric(float64(frameTime.Microseconds())/1000/float64(nframes), "ms/frame")
		})
	}
}

// BenchmarkDisplayFrame: the time to draw one frame (layout kept, time-
// dependent aspects recomputed, tcell screen shown) of the 200-entity
// system in the middle of its run, on a 160×50 screen.
func BenchmarkDisplayFrame(b *testing.B) {
	s, deltas, _ := workload(b, 200000)
	for _, d := range deltas {
		d.rel.Push(d.e)
	}
	sim, canvas, area := benchScreen(b)
	now := deltas[len(deltas)-1].e.T
	s.Draw(canvas, area, now)
	drawFrames(b, s, sim, canvas, area, now)
}

// drawFrames draws b.N frames of s a millisecond apart from now, timed,
// and checks that none was laid out again.
func drawFrames(b *testing.B, s *scene.Scene, sim tcell.SimulationScreen, canvas term.Canvas, area draw.Rect, now algebra.Time) {
	layouts := s.Layouts()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Draw(canvas, area, now+int64(i)*1e6)
		sim.Show()
	}
	b.StopTimer()
	if s.Layouts() != layouts {
		b.Fatalf("frames relaid out: %d → %d", layouts, s.Layouts())
	}
	b.ReportMetric(float64(len(s.Placed())), "icons-drawn")
}

// BenchmarkDisplayFrameScrolled: BenchmarkDisplayFrame's system on a 60×16
// screen, where its icons do not fit and the view is scrolled to their
// middle: a frame routes only the arrows with an end in view or crossing
// it, and draws only the icons in view.
func BenchmarkDisplayFrameScrolled(b *testing.B) {
	s, deltas, _ := workload(b, 200000)
	for _, d := range deltas {
		d.rel.Push(d.e)
	}
	sim := tcell.NewSimulationScreen("UTF-8")
	if err := sim.Init(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(sim.Fini)
	sim.SetSize(60, 16)
	canvas, area := term.Canvas{Screen: sim}, draw.Rect{X: 0, Y: 1, W: 60, H: 14}
	now := deltas[len(deltas)-1].e.T
	s.Draw(canvas, area, now)
	for s.ScrollRows(1, true) {
		if above, below := s.Scrolled(); above >= below {
			break
		}
		s.Draw(canvas, area, now)
	}
	s.Draw(canvas, area, now)
	if above, below := s.Scrolled(); above == 0 || below == 0 {
		b.Fatalf("not scrolled to the middle: %d above, %d below", above, below)
	}
	drawFrames(b, s, sim, canvas, area, now)
	above, below := s.Scrolled()
	b.ReportMetric(float64(above+below), "icons-out-of-view")
}
