package subject

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/display/defaults"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/scene"
	"github.com/tqmon/tqmon/display/show"
	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/display/ui"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/store/record"
)

// lossyDemo is a demo subject whose residents' connections lose the
// SendMessage packets sent between two instants of real time after their
// first batch (testkit.Lossy), as a resident whose buffer overflowed
// would.
type lossyDemo struct {
	Subject
	conns []*testkit.Lossy
}

func (s *lossyDemo) session(ctx context.Context, d time.Duration, mon func(Session) error) (*algebra.Window, error) {
	return s.Subject.session(ctx, d, func(ss Session) error {
		for i, c := range ss.Conns {
			l := testkit.NewLossy(c, "SendMessage", 150*time.Millisecond, 300*time.Millisecond)
			s.conns = append(s.conns, l)
			ss.Conns[i] = l
		}
		return mon(ss)
	})
}

// recordLossy records 600 ms of the demo (600 subject seconds) into a new
// database as tqmon record --demo does (Record), SendMessage packets lost
// from 150 to 300 ms, and opens it as query --db and replay --db do. It
// returns the subject and the packets taken out.
func recordLossy(t *testing.T) (Subject, uint64) {
	t.Helper()
	sub, err := Open(context.Background(), Options{Demo: true, Config: demo.DefaultConfig(1)})
	if err != nil {
		t.Fatal(err)
	}
	ld := &lossyDemo{Subject: sub}
	dir := filepath.Join(t.TempDir(), "rec")
	d, _, _, err := Record(context.Background(), ld, Stores{DB: dir},
		record.Options{Duration: 600 * time.Millisecond, SyncEvery: 20 * time.Millisecond})
	if !errors.Is(err, remote.ErrIncomplete) {
		t.Fatalf("the recording ended with %v; want incomplete", err)
	}
	d.Close()
	var removed uint64
	for _, c := range ld.conns {
		removed += c.Removed()
	}
	if removed == 0 {
		t.Fatal("nothing lost: the test shows nothing")
	}
	rec, err := Open(context.Background(), Options{DB: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec, removed
}

// playRecording starts playing sub into the display as tqmon replay --db
// --display does (playback; the paper's spec and query, and queries),
// paused at the recording's start, on a simulated 120×40 screen.
func playRecording(t *testing.T, sub Subject, queries ...query.Source) (*show.Playback, tcell.SimulationScreen) {
	t.Helper()
	queries = append(queries, query.Source{Name: defaults.PaperQueryName, Text: defaults.PaperQuery()})
	setup, err := show.Compile(show.Config{Catalog: sub.Catalog(), Queries: queries,
		Display: query.Source{Name: defaults.PaperSpecName, Text: defaults.PaperSpec()},
		Check:   check.Options{Now: sub.Now()}, FeedAll: true})
	if err != nil {
		t.Fatal(err)
	}
	start, end, ok := sub.Extent()
	if !ok {
		t.Fatal("the recording holds nothing")
	}
	pb, stop, err := playback(context.Background(), sub, setup,
		play.Options{Speed: 1, Start: &start, End: end, Paused: true, Clock: play.NewFakeClock(time.Unix(0, 0))},
		show.Options{Title: "tqmon replay"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	settled(t, pb)
	sim := tcell.NewSimulationScreen("UTF-8")
	if err := sim.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Fini)
	sim.SetSize(120, 40)
	return pb, sim
}

// seekTo moves the paused playback to at, waits until the network has
// digested everything up to it, and draws the frame there.
func seekTo(t *testing.T, pb *show.Playback, sim tcell.SimulationScreen, at algebra.Time) string {
	t.Helper()
	pb.Player.Seek(at)
	settled(t, pb)
	return draw(pb, sim)
}

// toEnd plays the paused playback through the end of the recording, waits
// until the network has digested it all, and draws the frame there.
func toEnd(t *testing.T, sub Subject, pb *show.Playback, sim tcell.SimulationScreen) string {
	t.Helper()
	_, end, _ := sub.Extent()
	pb.Player.Seek(end)
	select {
	case <-pb.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the recording was never played through")
	}
	return draw(pb, sim)
}

// draw draws the playback's present frame and returns its text.
func draw(pb *show.Playback, sim tcell.SimulationScreen) string {
	pb.Feed.Inbox.Drain()
	pb.Model.Draw(term.Canvas{Screen: sim})
	sim.Show()
	return term.Text(sim)
}

// settled waits until the player has released everything up to its
// position and the network has digested it.
func settled(t *testing.T, pb *show.Playback) {
	t.Helper()
	select {
	case <-pb.Player.Waiting():
	case <-time.After(20 * time.Second):
		t.Fatal("the player never caught up")
	}
}

// statusLine is the last line of a drawn frame.
func statusLine(g string) string {
	lines := strings.Split(strings.TrimRight(g, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestPlaybackShowsRecordedLoss: a database recorded from a run that lost
// SendMessage packets, played into the display (replay --db --display),
// shows its losses: before the first gap the status line says nothing is
// lost; at the end it says "lost N", N the count the recording's Lost
// relation holds (= the packets taken out), and the timeline marks the
// gaps '×' on SendMessage's "lost" row; each relation the recording says
// was sampled is named with its period.
func TestPlaybackShowsRecordedLoss(t *testing.T) {
	sub, removed := recordLossy(t)
	obs := sub.database().Observation()
	var recorded uint64
	first := algebra.Forever
	for _, r := range obs.Lost {
		recorded += uint64(r.Vals[1].N)
		first = min(first, r.From)
	}
	if len(obs.Lost) == 0 || recorded != removed {
		t.Fatalf("the recording's Lost relation counts %d in %d rows; %d packets were taken out", recorded, len(obs.Lost), removed)
	}
	var sampled []string
	for _, r := range obs.Observed {
		if r.Vals[1].N > 0 {
			sampled = append(sampled, fmt.Sprintf("%s/%v", r.Vals[0].S, time.Duration(r.Vals[1].N)))
		}
	}
	if len(sampled) == 0 {
		t.Fatal("the recording says nothing was sampled (RunningOn is)")
	}
	pb, sim := playRecording(t, sub)

	if st := statusLine(seekTo(t, pb, sim, first-1)); strings.Contains(st, "lost") {
		t.Errorf("before the first gap: status %q", st)
	}
	st := statusLine(toEnd(t, sub, pb, sim))
	if want := fmt.Sprintf("lost %d ", recorded); !strings.Contains(st+" ", want) {
		t.Errorf("at the end: status %q; want %q", st, want)
	}
	for _, s := range sampled {
		if !strings.Contains(st, s) {
			t.Errorf("at the end: status %q does not say %s was sampled", st, s)
		}
	}

	// The timeline, zoomed out until the whole run fits: SendMessage's
	// "lost" row marks the gaps.
	pb.Model.Handle(ui.KeyTimeline)
	for range 5 {
		pb.Model.Handle(ui.KeyZoomOut)
	}
	g := draw(pb, sim)
	var row string
	for _, l := range strings.Split(g, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "lost SendMessage") {
			row = l
		}
	}
	if !strings.Contains(row, "×") {
		t.Errorf("no gap marked on the timeline:\n%s", g)
	}
}

// TestPlaybackCutAtRecordedGaps: the display's answer over a recording
// with gaps is cut at them as query --db's is — the same tuples, the same
// valid times — and the cut shows: a count of sends valid across a gap
// ends where the gap begins.
func TestPlaybackCutAtRecordedGaps(t *testing.T) {
	sub, _ := recordLossy(t)
	src := query.Source{Name: "sent.tq", Text: "range of s is SendMessage\nretrieve Sent (N = count(s.Process for ever))\n"}

	// query --db's answer.
	prog, err := query.Compile(sub.Catalog(), []query.Source{src}, check.Options{Now: sub.Now()})
	if err != nil {
		t.Fatal(err)
	}
	rs, _, err := sub.Run(context.Background(), prog, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range rs[0].Table.Rows {
		want = append(want, fmt.Sprintf("%v [%d, %d)", r.Vals, r.From, r.To))
	}
	slices.Sort(want)

	// The display's, played to the end.
	pb, sim := playRecording(t, sub, src)
	toEnd(t, sub, pb, sim)
	var got []string
	add := func(tu *scene.Tuple) {
		got = append(got, fmt.Sprintf("%v [%d, %d)", tu.Vals, tu.From, tu.To))
	}
	sent := pb.Feed.Scene.Stored("Sent")
	sent.Open(add)
	sent.Closed(func(tu *scene.Tuple) bool { add(tu); return true })
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the display's answer\n%s\nquery --db's\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	cut := false
	for _, g := range sub.database().Observation().Lost {
		for _, r := range rs[0].Table.Rows {
			cut = cut || r.To == g.From
		}
	}
	if !cut {
		t.Errorf("no answer ends where a gap begins: the test shows nothing\n%s", strings.Join(want, "\n"))
	}
}
