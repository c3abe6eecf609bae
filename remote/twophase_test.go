package remote_test

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tqmon/tqmon/algebra"

	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/rewrite"
)

// TestEnablingTwoPhase: --explain's account of live enabling (Enabling)
// names the counting trigger for two-phase queries it can place at the
// resident — moving windows (held while the count is, or for the session
// by a resident without wire.CapCountWhile), for ever, ≥ — and says "widened" for those
// it cannot (two residents, a resident without counting, a threshold a
// count cannot reach first, a sum).
func TestEnablingTwoPhase(t *testing.T) {
	cat := demoCatalog(t)
	res := resident.New(ossensors.Spec(), resident.Options{})
	defer res.Close()
	h := res.Hello()
	noCount := *h
	noCount.Caps = []string{wire.CapTriggers, wire.CapWhile}
	holdCount := *h // a resident that counts but holds the enable for the session
	holdCount.Caps = []string{wire.CapTriggers, wire.CapWhile, wire.CapCount}
	busy := func(agg, cond string) string {
		return `range of m is Mailbox
range of s is SendMessage
retrieve into Busy (m.Mailbox, N = ` + agg + `)
range of b is Busy
range of w is Waiting
retrieve (w.Process, w.Mailbox) where b.Mailbox = w.Mailbox and ` + cond
	}
	moving := "count(s.Process by m.Mailbox where s.Mailbox = m.Mailbox for each 10s)"
	for _, c := range []struct {
		name, text string
		hellos     []*wire.Hello
		want       string
	}{
		{"moving", busy(moving, "b.N > 3"), []*wire.Hello{h}, "count of SendMessage packets within the last 10s to 4, while it stays at least 4 (disabled by the resident's first drain round"},
		{"ge", busy(moving, "b.N >= 3"), []*wire.Hello{h}, "within the last 10s to 3, while it stays at least 3"},
		{"reversed", busy(moving, "5 < b.N"), []*wire.Hello{h}, "within the last 10s to 6, while it stays at least 6"},
		{"hold", busy(moving, "b.N > 3"), []*wire.Hello{&holdCount}, "within the last 10s to 4 on"},
		{"ever", busy("count(s.Process by m.Mailbox where s.Mailbox = m.Mailbox for ever)", "b.N > 1"), []*wire.Hello{h}, "within ever to 2 on"},
		{"by-sensed", `range of s is SendMessage
retrieve into Busy (s.Mailbox, N = count(s.Process by s.Mailbox for each 10s))
range of b is Busy
range of w is Waiting
retrieve (w.Process) where b.Mailbox = w.Mailbox and b.N > 2`, []*wire.Hello{h}, "to 3 on"},
		{"two-residents", busy(moving, "b.N > 3"), []*wire.Hello{h, h}, "widened"},
		{"constants", `range of w is Waiting retrieve (w.Process) where w.Mailbox = "M1" or w.Mailbox = "M2"`, []*wire.Hello{h, h}, "M1, M2"},
		{"no-count", busy(moving, "b.N > 3"), []*wire.Hello{&noCount}, "widened"},
		{"zero", busy(moving, "b.N > -1"), []*wire.Hello{h}, "widened"},
		{"over-max", busy(moving, "b.N > 64"), []*wire.Hello{h}, "widened"},
		{"less", busy(moving, "b.N < 3"), []*wire.Hello{h}, "widened"},
	} {
		t.Run(c.name, func(t *testing.T) {
			prog, plans := finalPlans(t, cat, []query.Source{{Name: c.name, Text: c.text}})
			how := remote.Enabling(prog, plans, c.hellos)
			var got string
			for _, a := range rewrite.Alphas(plans[len(plans)-1]) {
				if a.Rel.Name == "Waiting" {
					got = how[remote.EnablingKey(a)]
				}
			}
			if !strings.Contains(got, c.want) {
				t.Errorf("Waiting is enabled by %q, want %q in it", got, c.want)
			}
		})
	}
}

// watermarks is a wire.Conn that records its batches' watermarks.
type watermarks struct {
	wire.Conn
	mu sync.Mutex
	ws []int64
}

func (c *watermarks) Recv() (*wire.Batch, error) {
	b, err := c.Conn.Recv()
	if b != nil {
		c.mu.Lock()
		c.ws = append(c.ws, b.Watermark)
		c.mu.Unlock()
	}
	return b, err
}

// lag bounds how long after a count falls the resident's drain took the
// enable back: the round that does reads its clock after the fall, and
// the one before read it before, so the lag is under the time between
// the rounds before and after that — at most the most that two
// consecutive batches' watermarks (each its round's clock less 1, or
// several rounds apart) took to advance.
func (c *watermarks) lag() algebra.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Not the final round's (math.MaxInt64: it covers every packet).
	ws := slices.DeleteFunc(slices.Clone(c.ws), func(w int64) bool { return w == math.MaxInt64 })
	var most int64
	for k := 2; k < len(ws); k++ {
		most = max(most, ws[k]-ws[k-2])
	}
	return algebra.Time(most)
}

// span is [from, to).
type span struct{ from, to algebra.Time }

// busySpans returns the spans in which at least n of the sends at ts
// fall within the inclusive window [t − window, t] — a counting
// trigger's own count: from the send that makes it until the oldest of
// the last n leaves the window — merged, in order.
func busySpans(ts []algebra.Time, n int, window algebra.Time) []span {
	ts = slices.Clone(ts)
	slices.Sort(ts)
	var out []span
	for i := n - 1; i < len(ts); i++ {
		if ts[i-n+1] < ts[i]-window {
			continue
		}
		s := span{ts[i], ts[i-n+1] + window + 1}
		if k := len(out) - 1; k >= 0 && s.from <= out[k].to {
			out[k].to = max(out[k].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

// overlaps reports whether [from, to) overlaps one of spans, each
// extended by ext at its end.
func overlaps(spans []span, from, to, ext algebra.Time) bool {
	for _, s := range spans {
		if from < s.to+ext && to > s.from {
			return true
		}
	}
	return false
}
