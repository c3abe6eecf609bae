package remote_test

import (
	"sync"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/wire"
)

// gapQueries read the relation losing packets (events, aggregates over
// them), one that loses none, and the observation itself.
var gapQueries = []query.Source{
	{Name: "all-sends", Text: `range of s is SendMessage retrieve (s.Process, s.Mailbox)`},
	{Name: "sends-so-far", Text: `range of s is SendMessage retrieve (Sends = count(s.Process for ever))`},
	{Name: "sends-by-mailbox", Text: `range of s is SendMessage retrieve (s.Mailbox, N = count(s.Process by s.Mailbox for ever))`},
	{Name: "count-by-state", Text: `range of p is Process retrieve (p.State, N = count(p.Process by p.State))`},
	{Name: "lost", Text: `range of l is Lost retrieve (l.Relation, l.Count)`},
	{Name: "observed", Text: `range of o is Observed retrieve (o.Relation, o.Period)`},
}

// lossyRun runs gapQueries live over the demo (seed, for d) while the
// resident loses SendMessage packets from from to to after its first
// batch; it fails unless some were lost, and returns the results, the
// stats, the truth, the connection and the losses printed.
func lossyRun(t *testing.T, seed uint64, d, from, to time.Duration) ([]query.Result, remote.LiveStats, *algebra.History, *testkit.Lossy, []remote.Loss, *query.Program) {
	t.Helper()
	prog, err := query.Compile(demoCatalog(t), gapQueries, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The loss is in real time after the first batch: a loaded machine
	// may deliver no SendMessage packet in it (the process without a
	// turn, or its batches before and after; 1 run in 10 with -cpu 1 at a
	// load of 20). Such a run shows nothing; it is run again (three runs
	// at most).
	for run := 1; ; run++ {
		var conn *testkit.Lossy
		var mu sync.Mutex
		var losses []remote.Loss
		opts := remote.LiveOptions{OnLoss: func(l remote.Loss) { mu.Lock(); losses = append(losses, l); mu.Unlock() }}
		got, st, truthH := runDemoWith(t, prog, demo.DefaultConfig(seed), d, opts, func(c wire.Conn) wire.Conn {
			conn = testkit.NewLossy(c, "SendMessage", from, to)
			return conn
		})
		if conn.Removed() != 0 && len(losses) != 0 {
			return got, st, truthH, conn, losses, prog
		}
		if run == 3 {
			t.Fatalf("nothing lost (%d removed, %d losses): the test shows nothing", conn.Removed(), len(losses))
		}
		t.Logf("run %d: nothing lost (%d removed, %d losses); again", run, conn.Removed(), len(losses))
	}
}

// sameAsTruth checks that the live results are the program's over the
// truth restricted to the run's observation, cut at its gaps.
func sameAsTruth(t *testing.T, prog *query.Program, got []query.Result, truthH *algebra.History, st remote.LiveStats) {
	t.Helper()
	want, _, err := prog.RunHistory(remote.RestrictObserved(truthH, st))
	if err != nil {
		t.Fatal(err)
	}
	sameTables(t, got, want, "live (the truth restricted to the observation)")
}

// TestLiveGapMatchesRestrictedTruth: a run that loses SendMessage packets
// in mid-run answers, aggregates included, exactly as the complete
// history restricted to its observation (RestrictObserved: cut at the
// gap) answers; not cut, the answers would differ. The Lost tuples are
// the losses printed, and delivered + lost = produced.
func TestLiveGapMatchesRestrictedTruth(t *testing.T) {
	got, st, truthH, conn, losses, prog := lossyRun(t, 1, 800*time.Millisecond, 200*time.Millisecond, 400*time.Millisecond)
	sameAsTruth(t, prog, got, truthH, st)
	// Not cut at the gap, the truth says more.
	plain := remote.Restrict(truthH, st.Start)
	plain.Table(algebra.LostName).Rows = nil
	uncut, _, err := prog.RunHistory(plain)
	if err != nil {
		t.Fatal(err)
	}
	if renderTables(uncut[:4]) == renderTables(got[:4]) {
		t.Fatal("the gap changed nothing: the test shows nothing")
	}
	// The Lost tuples are the losses printed.
	lost := sameLosses(t, got[4].Table.Rows, losses, st.Start)
	// Delivered + lost = produced.
	var produced, delivered int
	for _, row := range truthH.Table("SendMessage").Rows {
		if row.From >= st.Start {
			produced++
		}
	}
	delivered = len(got[0].Table.Rows) // "all-sends"
	if lost != conn.Removed() || uint64(delivered)+lost != uint64(produced) {
		t.Errorf("delivered %d + lost %d (removed %d) ≠ produced %d", delivered, lost, conn.Removed(), produced)
	}
	if !st.Incomplete() {
		t.Error("the run does not say it is incomplete")
	}
	t.Logf("%d sends produced, %d delivered, %d lost in %d gaps", produced, delivered, lost, len(losses))
}

// slowStart holds a resident's first batch back: the remote learns late
// that it carried out the run's commands.
type slowStart struct {
	wire.Conn
	wait time.Duration
	once sync.Once
}

func (c *slowStart) Recv() (*wire.Batch, error) {
	c.once.Do(func() { time.Sleep(c.wait) })
	return c.Conn.Recv()
}

// TestGapBeforeEveryResidentApplied: with two residents, one loses
// SendMessage packets before the remote knows the other has carried out
// the run's commands (so before the observation's start is known). The
// losses are reported once it is, inside the observation; the Lost
// tuples are the losses printed; and the answers (sends, counts of
// sends) equal the union of the two subjects' truths restricted to the
// observation, cut at the gaps.
func TestGapBeforeEveryResidentApplied(t *testing.T) {
	cat := demoCatalog(t)
	srcs := []query.Source{gapQueries[0], gapQueries[1], gapQueries[2], gapQueries[4], gapQueries[5]}
	prog, err := query.Compile(cat, srcs, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var lossyConn *testkit.Lossy
	var mu sync.Mutex
	var losses []remote.Loss
	var startKnown time.Time
	rs, st, truths, err := runTwoDemos(t, prog, 500*time.Millisecond, remote.LiveOptions{
		Started: func(algebra.Time) { mu.Lock(); startKnown = time.Now(); mu.Unlock() },
		OnLoss:  func(l remote.Loss) { mu.Lock(); losses = append(losses, l); mu.Unlock() },
	}, func(i int, c wire.Conn) wire.Conn {
		if i == 0 {
			lossyConn = testkit.NewLossy(c, "SendMessage", 20*time.Millisecond, 120*time.Millisecond)
			return lossyConn
		}
		return &slowStart{Conn: c, wait: 250 * time.Millisecond}
	})
	if err != nil {
		t.Fatal(err)
	}
	removed, lostAt := lossyConn.Removed(), lossyConn.Ended()
	if removed == 0 || len(losses) == 0 {
		t.Fatalf("nothing lost (%d removed, %d losses): the test shows nothing", removed, len(losses))
	}
	if !lostAt.Before(startKnown) {
		t.Fatalf("the losses ended after the observation's start was known (%v): the test shows nothing", startKnown.Sub(lostAt))
	}
	merged := algebra.NewHistory(cat)
	for _, h := range truths {
		merged.Tables["SendMessage"].Rows = append(merged.Tables["SendMessage"].Rows, h.Tables["SendMessage"].Rows...)
	}
	sameAsTruth(t, prog, rs, merged, st)
	lost := sameLosses(t, rs[3].Table.Rows, losses, st.Start)
	if lost != removed {
		t.Errorf("%d lost reported, %d removed", lost, removed)
	}
}

// sameLosses checks that the Lost tuples of a run are the losses it
// printed, inside its observation (from start on), and returns how many
// packets they count.
func sameLosses(t *testing.T, rows []algebra.Tuple, losses []remote.Loss, start algebra.Time) uint64 {
	t.Helper()
	if len(rows) != len(losses) {
		t.Fatalf("%d Lost tuples, %d losses printed", len(rows), len(losses))
	}
	var lost uint64
	for i, l := range losses {
		row := rows[i]
		if row.From < start || row.Vals[0].S != l.Rel || uint64(row.Vals[1].N) != l.Lost || row.From != l.From || row.To != l.To {
			t.Errorf("Lost tuple %v [%d, %d); printed %q [%d, %d); observed from %d", row.Vals, row.From, row.To, l.Format(algebra.TimeClock), l.From, l.To, start)
		}
		lost += l.Lost
	}
	return lost
}

// TestSampledSaidAndObservedQueryable: a sampled relation's observation
// says it was sampled and at which period, and a query reads it: its
// Observed tuple carries the period, over the span watched; a traced
// relation's carries none.
func TestSampledSaidAndObservedQueryable(t *testing.T) {
	cat := demoCatalog(t)
	prog, err := query.Compile(cat, []query.Source{
		{Name: "running", Text: `range of r is RunningOn retrieve (r.Process, r.Processor)`},
		{Name: "sends", Text: `range of s is SendMessage retrieve (s.Process)`},
		{Name: "observed", Text: `range of o is Observed retrieve (o.Relation, o.Period)`},
	}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, st, _ := runDemo(t, prog, demo.DefaultConfig(2), 300*time.Millisecond)
	periods := map[string]time.Duration{}
	for _, o := range st.Observed {
		periods[o.Rel] = o.Period
	}
	if periods["RunningOn"] <= 0 || periods["SendMessage"] != 0 {
		t.Fatalf("observations %+v: RunningOn is sampled, SendMessage traced", st.Observed)
	}
	rows := map[string]algebra.Tuple{}
	for _, row := range got[2].Table.Rows {
		rows[row.Vals[0].S] = row
	}
	for _, name := range []string{"RunningOn", "SendMessage"} {
		row, ok := rows[name]
		if !ok {
			t.Fatalf("no Observed tuple for %s: %v", name, got[2].Table.Rows)
		}
		if p := time.Duration(row.Vals[1].N); p != periods[name] || row.From != st.Start || row.To != algebra.Next(st.End) {
			t.Errorf("Observed %s: period %s over [%d, %d); want %s over [%d, %d)", name, p, row.From, row.To, periods[name], st.Start, algebra.Next(st.End))
		}
	}
}

// TestLossAtTheEndIsObserved: a run that is still losing packets when it
// ends reports the last loss, and it lies inside the observation (the
// stream it held back is delivered and observed); the answers are the
// restricted truth's.
func TestLossAtTheEndIsObserved(t *testing.T) {
	got, st, truthH, conn, losses, prog := lossyRun(t, 3, 500*time.Millisecond, 300*time.Millisecond, time.Hour)
	if lost := sameLosses(t, got[4].Table.Rows, losses, st.Start); lost != conn.Removed() {
		t.Errorf("%d lost reported, %d removed", lost, conn.Removed())
	}
	last := losses[len(losses)-1]
	if last.To > algebra.Next(st.End) {
		t.Errorf("the last loss [%d, %d) ends after the observation [%d, %d]", last.From, last.To, st.Start, st.End)
	}
	sameAsTruth(t, prog, got, truthH, st)
}
