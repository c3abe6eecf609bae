package remote_test

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/wire"
)

// lossy loses one sensor's packets between two instants of real time
// after the first batch, as a resident whose buffer overflowed would:
// the packets are taken out of the batches and added to the sensor's
// drop count.
type lossy struct {
	wire.Conn
	sensor   uint16
	from, to time.Duration
	first    time.Time
	removed  uint64
	wanted   uint64 // the sensor's last count from the resident
	drops    uint64
	mu       sync.Mutex
}

func (c *lossy) Recv() (*wire.Batch, error) {
	b, err := c.Conn.Recv()
	if err != nil {
		return b, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first.IsZero() {
		c.first = time.Now()
	}
	if d := time.Since(c.first); d >= c.from && d < c.to {
		kept := b.Packets[:0:0]
		for _, p := range b.Packets {
			if p.Sensor == c.sensor {
				c.removed++
				continue
			}
			kept = append(kept, p)
		}
		b.Packets = kept
	}
	seen := false
	for i := range b.Counts {
		if b.Counts[i].Sensor == c.sensor {
			c.wanted, c.drops = b.Counts[i].Wanted, b.Counts[i].Drops
			b.Counts[i].Drops += c.removed
			seen = true
		}
	}
	if !seen && c.removed > 0 {
		b.Counts = append(b.Counts, wire.Count{Sensor: c.sensor, Wanted: c.wanted, Drops: c.drops + c.removed})
	}
	return b, nil
}

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

// TestLiveGapMatchesRestrictedTruth: a run that loses SendMessage packets
// in mid-run answers, aggregates included, exactly as the complete
// history restricted to its observation (RestrictObserved: cut at the
// gap) answers; not cut, the answers would differ. The Lost tuples are
// the losses printed, and delivered + lost = produced.
func TestLiveGapMatchesRestrictedTruth(t *testing.T) {
	cat := demoCatalog(t)
	prog, err := query.Compile(cat, gapQueries, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var conn *lossy
	var mu sync.Mutex
	var losses []remote.Loss
	opts := remote.LiveOptions{OnLoss: func(l remote.Loss) { mu.Lock(); losses = append(losses, l); mu.Unlock() }}
	got, st, truthH := runDemoWith(t, prog, demo.DefaultConfig(1), 800*time.Millisecond, opts, func(c wire.Conn) wire.Conn {
		conn = &lossy{Conn: c, sensor: uint16(slices.Index(c.Hello().Sensors, "SendMessage")), from: 200 * time.Millisecond, to: 400 * time.Millisecond}
		return conn
	})
	if conn.removed == 0 || len(losses) == 0 {
		t.Fatalf("nothing lost (%d removed, %d losses): the test shows nothing", conn.removed, len(losses))
	}
	want, _, err := prog.RunHistory(remote.RestrictObserved(truthH, st))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := renderTables(got), renderTables(want); g != w {
		dir, _ := os.MkdirTemp("", "tqmon-gap-")
		os.WriteFile(filepath.Join(dir, "live.txt"), []byte(g), 0o644)
		os.WriteFile(filepath.Join(dir, "truth.txt"), []byte(w), 0o644)
		t.Fatalf("live results differ from the truth restricted to the observation (diff %s/live.txt %s/truth.txt)", dir, dir)
	}
	// Not cut at the gap, the truth says more.
	uncut, _, err := prog.RunHistory(remote.Restrict(truthH, st.Start))
	if err != nil {
		t.Fatal(err)
	}
	if renderTables(uncut[:4]) == renderTables(got[:4]) {
		t.Fatal("the gap changed nothing: the test shows nothing")
	}
	// The Lost tuples are the losses printed.
	var lostRows []algebra.Tuple
	lostRows = got[4].Table.Rows // "lost"
	if len(lostRows) != len(losses) {
		t.Fatalf("%d Lost tuples, %d losses printed", len(lostRows), len(losses))
	}
	var lost uint64
	for i, l := range losses {
		row := lostRows[i]
		if row.Vals[0].S != l.Rel || uint64(row.Vals[1].N) != l.Lost || row.From != l.From || row.To != l.To {
			t.Errorf("Lost tuple %v [%d, %d); printed %q [%d, %d)", row.Vals, row.From, row.To, l.Format(algebra.TimeClock), l.From, l.To)
		}
		lost += l.Lost
	}
	// Delivered + lost = produced.
	var produced, delivered int
	for _, row := range truthH.Table("SendMessage").Rows {
		if row.From >= st.Start {
			produced++
		}
	}
	delivered = len(got[0].Table.Rows) // "all-sends"
	if lost != conn.removed || uint64(delivered)+lost != uint64(produced) {
		t.Errorf("delivered %d + lost %d (removed %d) ≠ produced %d", delivered, lost, conn.removed, produced)
	}
	if !st.Incomplete() {
		t.Error("the run does not say it is incomplete")
	}
	t.Logf("%d sends produced, %d delivered, %d lost in %d gaps", produced, delivered, lost, len(losses))
}
