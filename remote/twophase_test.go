package remote_test

import (
	"strings"
	"testing"

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
