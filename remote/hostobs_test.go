package remote_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/wire"
)

// TestLiveFleetObservedPerHost: in a fleet, Observed and Lost carry the
// host. Of two demo hosts, h1 loses SendMessage packets for a while and
// h2's session is lost mid-run. Observed holds one tuple per relation and
// host, equal to the run's per-host spans (h2's ends where it was cut);
// Lost holds h1's gaps, with h1; and the sends of each host equal its own
// truth cut at its own gaps only — h2's sends inside h1's gap are kept
// (with every host's gaps cutting every host's tuples they are not).
func TestLiveFleetObservedPerHost(t *testing.T) {
	hosts := []string{"h1", "h2"}
	hellos := []*wire.Hello{{Name: "h1", SDL: ossensors.SDL}, {Name: "h2", SDL: ossensors.SDL}}
	srcs := []query.Source{
		{Name: "sends", Text: `range of s is SendMessage retrieve (s.Process, s.Host)`},
		{Name: "observed", Text: `range of o is Observed retrieve (o.Relation, o.Host)`},
		{Name: "lost", Text: `range of l is Lost retrieve (l.Relation, l.Count, l.Host)`},
		{Name: "h2", Text: `range of o is Observed retrieve (o.Relation) where o.Host = "h2"`},
	}
	cat, prog := fleetProgram(t, hellos, srcs)
	var mu sync.Mutex
	sent := make([][]wire.Command, 2)
	var lossy *testkit.Lossy
	var losses []remote.Loss
	at := time.Now().Add(450 * time.Millisecond)
	rs, st, truths, err := runTwoDemos(t, prog, 700*time.Millisecond, remote.LiveOptions{
		OnLoss: func(l remote.Loss) { mu.Lock(); losses = append(losses, l); mu.Unlock() },
	}, func(i int, c wire.Conn) wire.Conn {
		if i == 0 {
			lossy = testkit.NewLossy(c, "SendMessage", 50*time.Millisecond, 250*time.Millisecond)
			return host{Conn: lossy, name: hosts[i], mu: &mu, sent: &sent[i]}
		}
		return loses{host{Conn: c, name: hosts[i], mu: &mu, sent: &sent[i]}, at}
	})
	var lost *remote.SessionLostError
	if !errors.As(err, &lost) || lost.Resident != "h2" {
		t.Fatalf("err = %v, want h2's session lost", err)
	}
	if lossy.Removed() == 0 || len(losses) == 0 {
		t.Fatalf("nothing lost on h1 (%d removed, %d losses): the test shows nothing", lossy.Removed(), len(losses))
	}
	cut := algebra.Next(lost.Since)

	// Observed: one tuple per relation and host, the run's spans.
	var want []string
	for _, o := range st.Observed {
		if algebra.IsObservation(o.Rel) {
			continue
		}
		for _, hs := range o.Hosts {
			to := algebra.Next(hs.To)
			if hs.Lost {
				to = hs.To
			}
			want = append(want, fmt.Sprint(o.Rel, " ", hs.Host, " ", hs.From, " ", to))
		}
	}
	var got, gotH2 []string
	for _, r := range rs[1].Table.Rows {
		got = append(got, fmt.Sprint(r.Vals[0].S, " ", r.Vals[1].S, " ", r.From, " ", r.To))
		if r.Vals[1].S == "h2" && r.To != cut {
			t.Errorf("h2's Observed tuple %v [%d, %d) does not end where h2 was lost (%d)", r.Vals, r.From, r.To, cut)
		}
	}
	for _, r := range rs[3].Table.Rows {
		gotH2 = append(gotH2, r.Vals[0].S)
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) < 2 || !slices.Equal(got, want) {
		t.Errorf("Observed:\n%s\nwant the per-host spans:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(gotH2) == 0 || len(gotH2) != len(want)/2 {
		t.Errorf(`Observed where o.Host = "h2": %v, want one per relation`, gotH2)
	}

	// Lost: h1's gaps, with h1.
	var n uint64
	for _, r := range rs[2].Table.Rows {
		if r.Vals[0].S != "SendMessage" || r.Vals[2].S != "h1" {
			t.Errorf("Lost tuple %v: want SendMessage on h1", r.Vals)
		}
		n += uint64(r.Vals[1].N)
	}
	if n != lossy.Removed() {
		t.Errorf("Lost counts %d, %d removed", n, lossy.Removed())
	}
	for _, l := range losses {
		if l.Host != "h1" {
			t.Errorf("loss %q: want it h1's", l.Format(algebra.TimeClock))
		}
	}

	// Sends: each host's, cut at its own gaps only.
	truthH := remote.RestrictObserved(fleetTruth(cat, hosts, truths), st)
	wantR, _, err := prog.RunHistory(truthH)
	if err != nil {
		t.Fatal(err)
	}
	g, w := byHost(rs[0].Table), byHost(wantR[0].Table)
	if g["h1"] != w["h1"] {
		t.Errorf("h1's sends differ from its truth cut at its gaps:\n--- live\n%s--- truth\n%s", head(g["h1"]), head(w["h1"]))
	}
	var h2, inGap int
	for _, r := range wantR[0].Table.Rows {
		if r.Vals[1].S != "h2" || r.From >= cut {
			continue
		}
		h2++
		for _, l := range losses {
			if l.From <= r.From && r.From < l.To {
				inGap++
				break
			}
		}
	}
	var h2Live int
	for _, r := range rs[0].Table.Rows {
		if r.Vals[1].S == "h2" {
			h2Live++
		}
	}
	if h2Live != h2 || inGap == 0 {
		t.Errorf("h2's sends: %d live, %d in its truth before it was lost (%d inside h1's gaps): want them all, not cut at h1's gaps", h2Live, h2, inGap)
	}
}
