package resident

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/resident/wire"
)

func cmpPred(op wire.PredOp, attr uint16, v wire.Value) wire.Pred {
	return wire.Pred{Op: op, Attr: attr, Value: v}
}

func entIs(attr uint16, id string) wire.Pred {
	return cmpPred(wire.PEq, attr, wire.Value{Kind: wire.VEntity, S: id})
}

func fragCmd(id uint64, sid SensorID, p *wire.Pred, keep ...uint16) wire.Command {
	return wire.Command{Kind: wire.CFragment, ID: id, Sensor: uint16(sid), Pred: p, Keep: keep}
}

// dear is a predicate of more than maxEarlyCmps comparisons that holds
// exactly when attribute attr is entity id: the drain evaluates it.
func dear(attr uint16, id string) *wire.Pred {
	p := &wire.Pred{Op: wire.POr, Kids: []wire.Pred{entIs(attr, id)}}
	for i := range maxEarlyCmps {
		p.Kids = append(p.Kids, entIs(attr, fmt.Sprint("never-", i)))
	}
	return p
}

func TestPredEval(t *testing.T) {
	r, _ := newFake(t, Options{})
	sen := r.Sensor(sWide)
	p := r.Create(tProcess, "P7", nil)
	m := r.Create(tMailbox, "M3", nil)
	vals := []Value{{N: uint64(1<<64 - 5)}, {E: p}, {S: "abc"}, {N: math.Float64bits(2.5)}, {E: m}, {N: 1}, {S: ""}, {N: 3}}
	nan := append(slices.Clone(vals), Value{})
	nan[3].N = math.Float64bits(math.NaN())
	i := func(n int64) wire.Value { return wire.Value{Kind: wire.VInt, N: uint64(n)} }
	f := func(x float64) wire.Value { return wire.Value{Kind: wire.VFloat, N: math.Float64bits(x)} }
	s := func(x string) wire.Value { return wire.Value{Kind: wire.VString, S: x} }
	e := func(x string) wire.Value { return wire.Value{Kind: wire.VEntity, S: x} }
	and := func(k ...wire.Pred) wire.Pred { return wire.Pred{Op: wire.PAnd, Kids: k} }
	or := func(k ...wire.Pred) wire.Pred { return wire.Pred{Op: wire.POr, Kids: k} }
	not := func(k wire.Pred) wire.Pred { return wire.Pred{Op: wire.PNot, Kids: []wire.Pred{k}} }
	for _, tt := range []struct {
		p    wire.Pred
		vals []Value
		want bool
	}{
		{cmpPred(wire.PEq, 0, i(-5)), vals, true},
		{cmpPred(wire.PLt, 0, i(0)), vals, true}, // signed
		{cmpPred(wire.PGe, 0, i(-4)), vals, false},
		{cmpPred(wire.PEq, 1, e("P7")), vals, true},
		{cmpPred(wire.PNe, 1, e("P7")), vals, false},
		{cmpPred(wire.PPrefix, 1, e("P")), vals, true},
		{cmpPred(wire.PPrefix, 4, e("P")), vals, false},
		{cmpPred(wire.PGt, 4, e("M2")), vals, true}, // entities by ID, bytewise
		{cmpPred(wire.PEq, 2, s("abc")), vals, true},
		{cmpPred(wire.PPrefix, 2, s("ab")), vals, true},
		{cmpPred(wire.PPrefix, 2, s("abcd")), vals, false},
		{cmpPred(wire.PLe, 2, s("abb")), vals, false},
		{cmpPred(wire.PGt, 3, f(2)), vals, true},
		{cmpPred(wire.PLt, 3, f(-1)), vals, false},
		{cmpPred(wire.PEq, 3, f(math.NaN())), vals, false},
		{cmpPred(wire.PNe, 3, f(math.NaN())), vals, true},
		{cmpPred(wire.PGe, 3, f(0)), nan, false},
		{cmpPred(wire.PNe, 3, f(0)), nan, true},
		{cmpPred(wire.PEq, 5, wire.Value{Kind: wire.VBool, N: 1}), vals, true},
		{cmpPred(wire.PGt, 7, wire.Value{Kind: wire.VDuration, N: 2}), vals, true},
		{cmpPred(wire.PEq, 6, s("")), vals, true},
		{cmpPred(wire.PEq, 9, i(0)), vals, false}, // past the values given
		{and(entIs(1, "P7"), entIs(4, "M3")), vals, true},
		{and(entIs(1, "P7"), entIs(4, "M4")), vals, false},
		{or(entIs(1, "P8"), entIs(4, "M3")), vals, true},
		{or(entIs(1, "P8"), entIs(4, "M4")), vals, false},
		{not(or(entIs(1, "P8"), entIs(4, "M4"))), vals, true},
	} {
		if got := evalPred(&tt.p, &sen.kinds, tt.vals); got != tt.want {
			t.Errorf("%v attr %d %v: %v, want %v", tt.p.Op, tt.p.Attr, tt.p.Value, got, tt.want)
		}
	}
	var nilEnt []Value = []Value{{}, {}}
	if p := entIs(1, ""); !evalPred(&p, &sen.kinds, nilEnt) {
		t.Error("a missing entity is the empty ID")
	}
}

// sends runs SendMessage from each process to each mailbox.
func sends(send *Sensor, ps, ms []*Entity) {
	for _, p := range ps {
		for _, m := range ms {
			ev(send, Value{E: p}, Value{E: m})
		}
	}
}

func TestFragments(t *testing.T) {
	r, c := newFake(t, Options{})
	send, recv := r.Sensor(sSendMessage), r.Sensor(sReceive)
	ps := []*Entity{r.Create(tProcess, "P1", nil), r.Create(tProcess, "P2", nil)}
	var ms []*Entity
	for i := range 5 {
		ms = append(ms, r.Create(tMailbox, fmt.Sprint("M", i), nil))
	}
	if !slices.Contains(r.Hello().Caps, wire.CapFragments) {
		t.Fatal("hello does not announce fragments")
	}
	a, b, o := r.Open(), r.Open(), r.Open()
	sa, sb, so := newStream(t, a), newStream(t, b), newStream(t, o)
	for _, s := range []*Session{a, b, o} {
		mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
	}
	// a: M3 in the producer, only the mailbox kept; b: M1 in the drain;
	// o: no fragment. A trigger of a on a filtered packet still fires.
	m3 := entIs(1, "M3")
	mustApply(t, a, fragCmd(1, sSendMessage, &m3, 1))
	mustApply(t, a, wire.Command{Kind: wire.CTrigger, ID: 9, On: uint16(sSendMessage), Attr: 1, Sensor: uint16(sReceive),
		Conds: []wire.Cond{{Attr: 1, Value: wire.Value{Kind: wire.VEntity, S: "M0"}}}})
	mustApply(t, b, fragCmd(1, sSendMessage, dear(1, "M1")))
	if ft := send.frags.Load(); ft.early || len(ft.groups) != 2 {
		t.Fatalf("table: early %v, %d groups; want the drain's, 2 groups", ft.early, len(ft.groups))
	}
	sends(send, ps, ms)
	if !recv.Armed() {
		t.Error("a's trigger did not fire on a packet its fragment filtered")
	}
	st := []*stream{sa, sb, so}
	for _, x := range st {
		x.sync(r, c)
	}
	var got [3][]string
	for i, x := range st {
		for _, p := range x.take(false) {
			got[i] = append(got[i], x.name(p))
		}
	}
	// A value not kept is its kind's zero value (entity key 0: no ID).
	want := [3]string{"1  M3,1  M3", "1 P1 M1,1 P2 M1", ""}
	for i := range 2 {
		if g := strings.Join(got[i], ","); g != want[i] {
			t.Errorf("session %d got %q, want %q", i, g, want[i])
		}
	}
	if len(got[2]) != 10 {
		t.Errorf("the session without fragments got %d packets, want 10", len(got[2]))
	}

	// Unfragment: every packet again; a's second fragment (on the same
	// sensor, no predicate) passes everything, keeping every attribute.
	mustApply(t, b, wire.Command{Kind: wire.CUnfragment, ID: 1})
	mustApply(t, a, fragCmd(2, sSendMessage, nil))
	sends(send, ps, ms[:2])
	for _, x := range st {
		x.sync(r, c)
		if n := len(x.take(false)); n != 4 {
			t.Errorf("after unfragment: %d packets, want 4", n)
		}
	}

	// Refusals change nothing.
	bad := []struct {
		cmd   wire.Command
		field string
	}{
		{fragCmd(2, sSendMessage, nil), "id"},
		{wire.Command{Kind: wire.CUnfragment, ID: 77}, "id"},
		{fragCmd(3, sProcess, nil, 0), "keep"},
		{fragCmd(3, 99, nil), "sensor"},
		{fragCmd(3, sSendMessage, nil, 2), "keep[0]"},
		{fragCmd(3, sSendMessage, &wire.Pred{Op: wire.PEq, Attr: 5, Value: wire.Value{Kind: wire.VEntity}}), "pred"},
		{fragCmd(3, sSendMessage, &wire.Pred{Op: wire.PEq, Attr: 1, Value: wire.Value{Kind: wire.VInt}}), "pred"},
		{fragCmd(3, sWide, &wire.Pred{Op: wire.PPrefix, Attr: 0, Value: wire.Value{Kind: wire.VInt}}), "pred"},
		{fragCmd(3, sWide, &wire.Pred{Op: wire.PNot}), "pred"},
		{fragCmd(3, sWide, &wire.Pred{Op: 99}), "pred"},
	}
	for _, x := range bad {
		if err := a.Apply(&x.cmd); !isCmdErr(err, x.field) {
			t.Errorf("%v %+v: %v, want a refusal naming %s", x.cmd.Kind, x.cmd, err, x.field)
		}
	}
	a.Close()
	b.Close()
	o.Close()
	if send.frags.Load() != nil {
		t.Error("closed sessions left fragments")
	}
}

// TestFragmentCounts: with fragments in the producer or the drain, a
// filtered packet is neither delivered nor wanted nor dropped: delivered +
// dropped = wanted, exactly.
func TestFragmentCounts(t *testing.T) {
	for _, early := range []bool{true, false} {
		t.Run(fmt.Sprint("early=", early), func(t *testing.T) {
			r, c := newFake(t, Options{})
			send := r.Sensor(sSendMessage)
			ps := []*Entity{r.Create(tProcess, "P1", nil)}
			ms := []*Entity{r.Create(tMailbox, "M1", nil), r.Create(tMailbox, "M2", nil), r.Create(tMailbox, "M3", nil)}
			s := r.Open()
			st := newStream(t, s)
			mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
			p := dear(1, "M1")
			if early {
				q := entIs(1, "M1")
				p = &q
			}
			mustApply(t, s, fragCmd(1, sSendMessage, p))
			for range 7 {
				sends(send, ps, ms)
			}
			st.sync(r, c)
			n, got := st.delivered(sSendMessage), st.counts[uint16(sSendMessage)]
			if n != 7 || got.Wanted != 7 || got.Drops != 0 {
				t.Errorf("delivered %d, wanted %d, dropped %d; want 7, 7, 0", n, got.Wanted, got.Drops)
			}
		})
	}
}

// TestFragmentIntervals: a traced interval's begin and end are filtered
// alike (same values); one whose begin was sent keeps its end after a
// fragment that rejects it is installed (the producer's table); the
// drain's table filters begin and end alike too.
func TestFragmentIntervals(t *testing.T) {
	r, c := newFake(t, Options{})
	hold, span := r.Sensor(sHolding), r.Sensor(sWideSpan)
	p := r.Create(tProcess, "P1", nil)
	m := r.Create(tMailbox, "M1", nil)
	s := r.Open()
	st := newStream(t, s)
	mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sHolding)})
	mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sWideSpan)})
	open := hold.Begin([]Value{{E: p}, {E: m}, {S: "early"}}) // begun before the fragment
	x := cmpPred(wire.PPrefix, 2, wire.Value{Kind: wire.VString, S: "x"})
	mustApply(t, s, fragCmd(1, sHolding, &x, 2))
	mustApply(t, s, fragCmd(2, sWideSpan, dear(1, "P1")))
	in := hold.Begin([]Value{{E: p}, {E: m}, {S: "xin"}})
	out := hold.Begin([]Value{{E: p}, {E: m}, {S: "out"}})
	hold.End(out, []Value{{E: p}, {E: m}, {S: "out"}})
	hold.End(in, []Value{{E: p}, {E: m}, {S: "xin"}})
	hold.End(open, []Value{{E: p}, {E: m}, {S: "early"}})
	q := r.Create(tProcess, "P2", nil)
	w := func(e *Entity) []Value { return []Value{{N: 1}, {E: e}, {S: "s"}, {}, {E: m}, {}, {}, {}} }
	sp := span.Begin(w(p))
	sq := span.Begin(w(q))
	span.End(sq, w(q))
	span.End(sp, w(p))
	st.sync(r, c)
	if n, cnt := st.delivered(sHolding), st.counts[uint16(sHolding)]; n != cnt.Wanted {
		t.Errorf("Holding: delivered %d, wanted %d", n, cnt.Wanted)
	}
	if n, cnt := st.delivered(sWideSpan), st.counts[uint16(sWideSpan)]; n != cnt.Wanted {
		t.Errorf("WideSpan: delivered %d, wanted %d", n, cnt.Wanted)
	}
	var got []string
	for _, pk := range st.take(false) {
		got = append(got, fmt.Sprintf("%v %s", pk.Kind, st.name(pk)))
	}
	want := "begin 2   early,begin 2   xin,end 3   xin,end 3   early,begin 2 1 P1 s 0 M1 0  0,end 3 1 P1 s 0 M1 0  0"
	// Holding: the fragment keeps only Note (attribute 2); the drain
	// projects, so even the begin written before the install.
	if g := strings.Join(got, ","); g != want {
		t.Errorf("got  %s\nwant %s", g, want)
	}
}

// TestFragmentSampled: a sampled sensor's tuples the fragment rejects are
// not sampled for the session (nor ended to it); those it passes are,
// projected.
func TestFragmentSampled(t *testing.T) {
	const P = minSamplePeriod
	r, c := newFake(t, Options{})
	r.autoSample.Store(false)
	run := r.Sensor(sRunningOn)
	cpu1, cpu2 := r.Create(tProcessor, "CPU1", nil), r.Create(tProcessor, "CPU2", nil)
	p1, p2 := r.Create(tProcess, "P1", nil), r.Create(tProcess, "P2", nil)
	s := r.Open()
	st := newStream(t, s)
	c.set(P / 10)
	mustApply(t, s, wire.Command{Kind: wire.CSample, ID: 1, Sensor: uint16(sRunningOn), All: true, Period: P})
	on1 := entIs(1, "CPU1")
	mustApply(t, s, fragCmd(1, sRunningOn, &on1, 1))
	at := func(ticks float64) { c.set(int64(ticks * float64(P))) }
	at(0.2)
	a := run.StateBegin([]Value{{E: p1}, {E: cpu1}})
	b := run.StateBegin([]Value{{E: p2}, {E: cpu2}})
	at(1.5)
	r.sampleDue()
	at(1.7)
	run.StateEnd(a, nil)
	run.StateEnd(b, nil)
	at(2.5)
	r.sampleDue()
	st.sync(r, c)
	if n, cnt := st.delivered(sRunningOn), st.counts[uint16(sRunningOn)]; n+cnt.Drops != cnt.Wanted {
		t.Errorf("RunningOn: delivered %d + dropped %d, wanted %d", n, cnt.Drops, cnt.Wanted)
	}
	var got []string
	for _, pk := range st.take(false) {
		got = append(got, fmt.Sprintf("%v %s", pk.Kind, st.name(pk)))
	}
	if g := strings.Join(got, ","); g != "sample 5  CPU1,end 3  CPU1" {
		t.Errorf("got %s", g)
	}
}

// TestFragmentEarlyBudget: a sensor's fragments stay in the producer up to
// maxEarlyCmps comparisons over every session, equal predicates counted
// once; one more moves them to the drain; a session's comparisons stop at
// maxSessionCmps.
func TestFragmentEarlyBudget(t *testing.T) {
	r, _ := newFake(t, Options{})
	send := r.Sensor(sSendMessage)
	a, b := r.Open(), r.Open()
	or := func(from, n int) *wire.Pred {
		p := &wire.Pred{Op: wire.POr}
		for i := range n {
			p.Kids = append(p.Kids, entIs(1, fmt.Sprint("M", from+i)))
		}
		return p
	}
	mustApply(t, a, fragCmd(1, sSendMessage, or(0, maxEarlyCmps/2)))
	mustApply(t, b, fragCmd(1, sSendMessage, or(0, maxEarlyCmps/2))) // equal: shared
	mustApply(t, b, fragCmd(2, sSendMessage, or(100, maxEarlyCmps/2)))
	if ft := send.frags.Load(); !ft.early || len(ft.groups) != 2 {
		t.Fatalf("%d comparisons in %d groups: early %v, want the producer's", maxEarlyCmps, len(ft.groups), ft.early)
	}
	mustApply(t, a, fragCmd(2, sSendMessage, or(200, 1)))
	if send.frags.Load().early {
		t.Fatalf("%d comparisons: still the producer's", maxEarlyCmps+1)
	}
	mustApply(t, a, wire.Command{Kind: wire.CUnfragment, ID: 2})
	if !send.frags.Load().early {
		t.Fatal("back to 32 comparisons: not the producer's again")
	}
	// a holds 16 comparisons: 48 more fit, 49 do not.
	if err := a.Apply(ptr(fragCmd(3, sWide, or(0, maxSessionCmps-maxEarlyCmps/2+1)))); !isCmdErr(err, "pred") {
		t.Fatalf("past the session's comparisons: %v", err)
	}
	mustApply(t, a, fragCmd(3, sWide, or(0, maxSessionCmps-maxEarlyCmps/2)))
}

func ptr[T any](x T) *T { return &x }

// TestEntityFragments: a fragment on an entity relation sends a session
// only the tuples that satisfy it — begin and end alike, the drain
// deciding — while a session without one gets every tuple, and a
// Running-state trigger of the filtering session still sees the tuples
// its fragment holds back. An entity relation's tuples are sent whole:
// Keep is refused.
func TestEntityFragments(t *testing.T) {
	r, c := newFake(t, Options{})
	if !slices.Contains(r.Hello().Caps, wire.CapEntityFragments) {
		t.Fatal("hello does not announce entity fragments")
	}
	a, o := r.Open(), r.Open()
	sa, so := newStream(t, a), newStream(t, o)
	waiting := wire.Pred{Op: wire.PEq, Attr: 1, Value: wire.Value{Kind: wire.VEnum, N: 2}}
	mustApply(t, a, fragCmd(1, sProcess, &waiting))
	if ft := r.Sensor(sProcess).frags.Load(); ft.early {
		t.Fatal("an entity relation's fragments are the producer's: they must be the drain's")
	}
	mustApply(t, a, wire.Command{Kind: wire.CTrigger, ID: 2, On: uint16(sProcess), Attr: 0, Sensor: uint16(sSendMessage),
		Conds: []wire.Cond{{Attr: 1, Value: wire.Value{Kind: wire.VEnum, N: 1}}}, While: true})
	if err := a.Apply(&wire.Command{Kind: wire.CFragment, ID: 3, Sensor: uint16(sProcess), Keep: []uint16{0}}); !isCmdErr(err, "keep") {
		t.Fatalf("keep on an entity relation: %v", err)
	}
	p := r.Create(tProcess, "P1", []Value{{N: 0}})
	p.SetState([]Value{{N: 1}})
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P1"}})
	p.SetState([]Value{{N: 2}})
	p.SetState([]Value{{N: 0}})
	p.Delete()
	names := func(x *stream) string {
		x.sync(r, c)
		var out []string
		for _, p := range x.take(true) {
			out = append(out, x.name(p))
		}
		return strings.Join(out, ",")
	}
	if g, w := names(sa), "6 P1 2,7 P1 2"; g != w {
		t.Errorf("filtered session got %q, want %q", g, w)
	}
	if g, w := names(so), "6 P1 0,7 P1 0,6 P1 1,7 P1 1,6 P1 2,7 P1 2,6 P1 0,7 P1 0"; g != w {
		t.Errorf("whole session got %q, want %q", g, w)
	}
}
