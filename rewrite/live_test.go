package rewrite_test

import (
	"cmp"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/remote"
)

// feedItem is one input to a live network.
type feedItem struct {
	t      algebra.Time
	phase  int // 0 for ends, 1 for begins and events
	entity bool
	begin  bool
	rel    string
	kind   stream.PacketKind
	key    uint64
	from   algebra.Time
	vals   []algebra.Value
}

// supersetFeed is what a resident enabling everything would report for a
// history: entity tuples, every sensor packet, and samples of every tuple
// valid at every base Clock tick; tuples still open at the end are
// reported then (at forever).
func supersetFeed(h *algebra.History) []feedItem {
	start, end, _ := h.Extent()
	ticks := algebra.ClockTicks(1, h.Catalog.ClockPeriod, start, end)
	var feed []feedItem
	key := uint64(0)
	for _, r := range h.Catalog.Relations {
		for _, row := range h.Table(r.Name).Rows {
			key++
			switch {
			case r.Class == algebra.ClassEntity:
				feed = append(feed, feedItem{t: row.From, phase: 1, entity: true, begin: true, rel: r.Name, key: key, vals: row.Vals})
				if row.To != algebra.Forever {
					feed = append(feed, feedItem{t: row.To, phase: 0, entity: true, rel: r.Name, key: key, vals: row.Vals})
				}
			case r.Strategy.Kind == algebra.NotSensed:
				// Not a sensor of its own: absent from a live subject.
			case r.IsEvent():
				feed = append(feed, feedItem{t: row.From, phase: 1, rel: r.Name, kind: stream.PacketEvent, key: key, vals: row.Vals})
			case r.Strategy.Kind == algebra.Traced && r.Strategy.Whole:
				feed = append(feed, feedItem{t: row.To, phase: 0, rel: r.Name, kind: stream.PacketWhole, key: key, from: row.From, vals: row.Vals})
			case r.Strategy.Kind == algebra.Traced:
				feed = append(feed, feedItem{t: row.From, phase: 1, rel: r.Name, kind: stream.PacketBegin, key: key, from: row.From, vals: row.Vals})
				feed = append(feed, feedItem{t: row.To, phase: 0, rel: r.Name, kind: stream.PacketEnd, key: key, from: row.From, vals: row.Vals})
			case r.Strategy.Kind == algebra.TracedThenDisabled:
				feed = append(feed, feedItem{t: row.To, phase: 0, rel: r.Name, kind: stream.PacketWhole, key: key, from: row.From, vals: row.Vals})
			case r.Strategy.Kind == algebra.Sampled:
				for _, c := range ticks {
					if row.From <= c && c < row.To {
						feed = append(feed, feedItem{t: c, phase: 1, rel: r.Name, kind: stream.PacketSample, key: key, from: row.From, vals: row.Vals})
					}
				}
				if row.To != algebra.Forever {
					feed = append(feed, feedItem{t: row.To, phase: 0, rel: r.Name, kind: stream.PacketSampleEnd, key: key, from: row.From, vals: row.Vals})
				}
			}
		}
	}
	slices.SortStableFunc(feed, func(a, b feedItem) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.phase, b.phase)
	})
	return feed
}

// runLive runs plans over what a resident enabling everything reports of
// h to a monitor that came at from (h's start when from is Beginning),
// with αs shared when share (exec.Options.ShareAlphas).
//
// borrow runs it for a consumer that borrows its results
// (LiveOptions.Borrow): the collectors keep nothing, their OnElem borrows
// each element and copies it into a collector of the test's, and the
// network reuses the records and values it emits where they are
// forgotten (exec's forgets). A network that reused what is still read,
// or what its consumer keeps, answers otherwise.
func runLive(t testing.TB, cat *algebra.Catalog, h *algebra.History, from algebra.Time, stmts []*check.Retrieve, ps []plan.Node, share, borrow bool) []*algebra.Table {
	t.Helper()
	net, err := exec.Build(cat, stmts, ps, exec.Options{SweepMin: 1, ShareAlphas: share})
	if err != nil {
		t.Fatal(err)
	}
	var kept []*exec.Collector
	if borrow {
		for _, s := range net.Stmts {
			s.Result.Discard, s.Result.Borrow = true, true
			c := exec.NewCollector(s.Result.Rel)
			kept = append(kept, c)
			s.Result.OnElem = c.Keep
		}
	}
	start, end, _ := h.Extent()
	feed := supersetFeed(h)
	if from != algebra.Beginning {
		start, feed = from, lateFeed(feed, from)
	}
	live := net.Live(start)
	for i, f := range feed {
		if f.entity {
			err = live.Entity(f.rel, f.begin, f.key, f.vals, f.t)
		} else {
			err = live.Packet(f.rel, f.kind, f.key, f.from, f.vals, f.t)
		}
		if err != nil {
			t.Fatal(err)
		}
		// Watermarks now and then, as batches would bring — none before
		// beginning, and none just before an open tuple's report at
		// forever (it would step every clock tick of the time line).
		if i%7 == 0 && f.t != algebra.Beginning && f.t != algebra.Forever {
			if err := live.Advance(algebra.Prev(f.t)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := live.Finish(end); err != nil {
		t.Fatal(err)
	}
	var out []*algebra.Table
	for i, s := range net.Stmts {
		if borrow {
			kept[i].Advance(algebra.Forever)
			out = append(out, kept[i].Table())
			continue
		}
		out = append(out, s.Result.Table())
	}
	return out
}

// TestLiveDifferential feeds the live driver everything a fully enabled
// resident would report; α operators must keep exactly what their plans
// need, so naive and optimised plans both equal the reference evaluator.
func TestLiveDifferential(t *testing.T) {
	root := filepath.Join("..", "testdata", "differential")
	liveDifferential(t, testkit.LoadCatalog(t, filepath.Join(root, "spec.sdl")))
}

// TestLiveDifferentialWhole is TestLiveDifferential with Waiting traced and
// reported whole at its end, as a kernel sensor whose `to` clause binds
// values reports it (Strategy.Whole): each tuple arrives as late as it is
// long, under a Covering enable too. A network that took such an α to be
// on time (MaxLate 0) let its joins purge partners a tuple still to come
// needed (SweepMin 1 purges at every chance).
func TestLiveDifferentialWhole(t *testing.T) {
	root := filepath.Join("..", "testdata", "differential")
	cat := testkit.LoadCatalog(t, filepath.Join(root, "spec.sdl"))
	w := cat.Lookup("Waiting")
	w.Strategy = algebra.Strategy{Kind: algebra.Traced, On: w.Strategy.On, Counter: 1, Whole: true}
	liveDifferential(t, cat)
}

// TestLiveDifferentialStartedLate is TestLiveDifferential for a monitor
// that connects in the middle of the history, with Waiting traced (begin
// and end packets): a Waiting tuple that began before the monitor came is
// reported by its end alone, beginning when the monitor came (the rule
// remote's clip applies), so it arrives as late as it is old although the
// α's enable covers every tuple. The answer must be the complete-history
// answer over the restricted history (remote.Restrict).
func TestLiveDifferentialStartedLate(t *testing.T) {
	root := filepath.Join("..", "testdata", "differential")
	cat := testkit.LoadCatalog(t, filepath.Join(root, "spec.sdl"))
	w := cat.Lookup("Waiting")
	w.Strategy = algebra.Strategy{Kind: algebra.Traced, On: w.Strategy.On, Counter: 1}
	liveDifferentialFrom(t, cat, true)
}

func liveDifferential(t *testing.T, cat *algebra.Catalog) { liveDifferentialFrom(t, cat, false) }

// lateFeed is feed as a monitor that came at f receives it: nothing ends
// or happens before f; tuples alive at f begin at f — an entity's begin
// is moved to f, and so is a traced interval's (the resident sends a
// session enabled while the tuple is in progress its begin then:
// resident's beginOpen, clipped to f by remote); a whole packet
// (traced then disabled, or Strategy.Whole) comes alone, beginning at f.
func lateFeed(feed []feedItem, f algebra.Time) []feedItem {
	var out []feedItem
	early := map[uint64]bool{}
	for _, it := range feed {
		ends := it.entity && !it.begin || it.kind == stream.PacketEnd || it.kind == stream.PacketSampleEnd
		begins := it.entity && it.begin || !it.entity && it.kind == stream.PacketBegin
		switch {
		case it.t < f && begins:
			early[it.key] = true
			it.t = f
		case ends && it.t <= f, it.t < f, it.kind == stream.PacketWhole && it.t <= f:
			if early[it.key] {
				// Its begin, moved to f, goes too.
				out = slices.DeleteFunc(out, func(o feedItem) bool { return o.key == it.key })
			}
			continue
		}
		if (!begins || !it.entity) && it.from < f {
			it.from = f
		}
		out = append(out, it)
	}
	slices.SortStableFunc(out, func(a, b feedItem) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.phase, b.phase)
	})
	return out
}

func liveDifferentialFrom(t *testing.T, cat *algebra.Catalog, late bool) {
	root := filepath.Join("..", "testdata", "differential")
	corpus := append(testkit.ReadCorpus(t, filepath.Join(root, "queries.tq")), testkit.ReadCorpus(t, filepath.Join(root, "rules.tq"))...)
	n := testkit.Histories() / 3
	for _, q := range corpus {
		t.Run(q.Name, func(t *testing.T) {
			cfg := histgen.DefaultConfig(0)
			cfg.Edges = true // histories across the epoch and at the ends of time too
			cfg.Integrity = true
			stmts := testkit.Compile(t, cat, q.Name, q.Text, cfg.Span)
			naive, _ := plans(t, cat, stmts, false)
			opt, _ := plans(t, cat, stmts, true)
			for seed := 0; seed < n; seed++ {
				cfg.Seed = uint64(seed)
				h := histgen.Random(cat, cfg)
				// Relations without a sensor are not part of a live subject.
				for _, r := range cat.Relations {
					if r.Class != algebra.ClassEntity && r.Strategy.Kind == algebra.NotSensed {
						h.Table(r.Name).Rows = nil
					}
				}
				from := algebra.Time(algebra.Beginning)
				if late {
					if lo, hi, ok := h.Extent(); ok && lo != algebra.Beginning && hi != algebra.Forever {
						from = lo + (hi-lo)/2
					}
				}
				rh := h
				if from != algebra.Beginning {
					rh = remote.Restrict(h, from)
				}
				want, err := ref.Eval(rh, stmts)
				if errors.Is(err, expr.ErrOverflow) {
					continue // an overflow at the ends of time: algebra/exec's differential test compares those
				}
				if err != nil {
					t.Fatal(err)
				}
				// The optimised plans run as remote runs them, their αs
				// shared (so aggregates of their shape are fused:
				// exec.FusedAgg), and so again for a consumer that
				// borrows its results (see runLive); the naive ones
				// with an α each.
				for _, c := range []struct {
					name          string
					ps            []plan.Node
					share, borrow bool
				}{{"optimised", opt, true, false}, {"optimised, borrowed", opt, true, true}, {"naive", naive, false, false}} {
					got := runLive(t, cat, h, from, stmts, c.ps, c.share, c.borrow)
					for i := range want {
						if g, w := testkit.Rows(got[i]), testkit.Rows(want[i]); g != w {
							t.Fatalf("seed %d, statement %d, %s plan %s:\n--- live\n%s--- reference\n%s", seed, i+1, c.name, plan.String(c.ps[i]), g, w)
						}
					}
				}
			}
		})
	}
}
