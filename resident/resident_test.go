package resident

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/wire"
)

func TestHello(t *testing.T) {
	r, _ := newFake(t, Options{Name: "demo", Wall: func() int64 { return 5e18 }})
	h := r.Hello()
	if h.Version != wire.Version || h.Name != "demo" || h.SDL != "-- test spec" || h.Period != 1e9 {
		t.Fatalf("hello %+v", h)
	}
	if len(h.Types) != 3 || h.Types[1] != "Process" || len(h.Sensors) != 10 || h.Sensors[sWaiting] != "Waiting" {
		t.Fatalf("hello %+v", h)
	}
	if h.MonoBase != 0 || h.WallBase != 5e18 {
		t.Fatalf("clock mapping %d %d", h.MonoBase, h.WallBase)
	}
	r2 := New(testSpec(), Options{})
	defer r2.Close()
	h2 := r2.Hello()
	if d := time.Now().UnixNano() - h2.WallBase; d < 0 || d > int64(time.Minute) {
		t.Fatalf("wall base %d", h2.WallBase)
	}
	if n := r2.Now(); n < h2.MonoBase {
		t.Fatalf("now %d before mono base %d", n, h2.MonoBase)
	}
}

func TestEnableCounting(t *testing.T) {
	r, c := newFake(t, Options{})
	send := r.Sensor(sSendMessage)
	p1 := r.Create(tProcess, "P1", []Value{{N: 0}})
	m := r.Create(tMailbox, "M", nil)
	a, b := r.Open(), r.Open()
	sa, sb := newStream(t, a), newStream(t, b)

	if send.Armed() {
		t.Fatal("armed with no flag")
	}
	mustApply(t, a, enable(sSendMessage, tProcess, "P1"))
	mustApply(t, a, enable(sSendMessage, tProcess, "P1"))
	mustApply(t, b, enable(sSendMessage, tProcess, "P1"))
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P1"}})
	if !send.Armed() {
		t.Fatal("not armed")
	}
	ev(send, Value{E: p1}, Value{E: m})
	mustApply(t, a, disable(sSendMessage, tProcess, "P1"))
	mustApply(t, a, disable(sSendMessage, tProcess, "P1"))
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P1"}}) // b still holds it
	ev(send, Value{E: p1}, Value{E: m})                          // to b only
	mustApply(t, b, disable(sSendMessage, tProcess, "P1"))
	flagsEqual(t, r, map[string][]string{})
	if send.Armed() {
		t.Fatal("armed after every disable")
	}
	if err := b.Apply(&wire.Command{Kind: wire.CDisable, Sensor: uint16(sSendMessage), Type: uint16(tProcess), Entity: "P1"}); !isCmdErr(err, "entity") {
		t.Fatalf("extra disable: %v", err)
	}
	ev(send, Value{E: p1}, Value{E: m}) // nobody
	sa.sync(r, c)
	sb.sync(r, c)
	if got := sa.take(false); len(got) != 1 || sa.name(got[0]) != "1 P1 M" {
		t.Fatalf("a got %v", got)
	}
	if got := sb.take(false); len(got) != 2 {
		t.Fatalf("b got %v", got)
	}

	// Pending: an enable for an ID that does not exist yet.
	mustApply(t, a, enable(sSendMessage, tProcess, "P2"))
	flagsEqual(t, r, map[string][]string{})
	if send.Armed() {
		t.Fatal("armed by a pending enable")
	}
	p2 := r.Create(tProcess, "P2", []Value{{N: 1}})
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P2"}})
	if !send.Armed() {
		t.Fatal("pending enable not applied at Create")
	}
	ev(send, Value{E: p2}, Value{E: m})
	ev(send, Value{E: p1}, Value{E: m})
	p2.Delete()
	if send.Armed() {
		t.Fatal("armed after the enabled entity's deletion")
	}
	p2b := r.Create(tProcess, "P2", nil) // ID reused: the flag is by ID, still held
	if p2b.Key() == p2.Key() {
		t.Fatal("key reused")
	}
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P2"}})
	ev(send, Value{E: p2b}, Value{E: m})
	sa.sync(r, c)
	got := sa.take(false)
	if len(got) != 2 || sa.name(got[0]) != "1 P2 M" || sa.name(got[1]) != "1 P2 M" || got[0].Vals[0].N == got[1].Vals[0].N {
		t.Fatalf("a got %v", got)
	}
	a.Close()
	flagsEqual(t, r, map[string][]string{})
	if send.Armed() {
		t.Fatal("armed after the session closed")
	}
	if _, err := a.Recv(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("recv after close: %v", err)
	}
	if err := a.Apply(&wire.Command{Kind: wire.CLease, Period: 1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("apply after close: %v", err)
	}
}

func TestWholeType(t *testing.T) {
	r, c := newFake(t, Options{})
	send := r.Sensor(sSendMessage)
	p1 := r.Create(tProcess, "P1", nil)
	m := r.Create(tMailbox, "M", nil)
	s := r.Open()
	st := newStream(t, s)
	mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
	mustApply(t, s, enable(sSendMessage, tProcess, "P1"))
	flagsEqual(t, r, map[string][]string{"SendMessage": {"*", "P1"}})
	p3 := r.Create(tProcess, "P3", nil)
	ev(send, Value{E: p1}, Value{E: m})
	ev(send, Value{E: p3}, Value{E: m})
	mustApply(t, s, wire.Command{Kind: wire.CDisableAll, Sensor: uint16(sSendMessage)})
	ev(send, Value{E: p3}, Value{E: m}) // no longer
	ev(send, Value{E: p1}, Value{E: m}) // still, by its own flag
	mustApply(t, s, disable(sSendMessage, tProcess, "P1"))
	if send.Armed() {
		t.Fatal("armed")
	}
	if err := s.Apply(&wire.Command{Kind: wire.CDisableAll, Sensor: uint16(sSendMessage)}); !isCmdErr(err, "sensor") {
		t.Fatalf("extra disable all: %v", err)
	}
	st.sync(r, c)
	got := st.take(false)
	var names []string
	for _, p := range got {
		names = append(names, st.name(p))
	}
	if strings.Join(names, ",") != "1 P1 M,1 P3 M,1 P1 M" {
		t.Fatalf("got %v", names)
	}
}

func TestTrigger(t *testing.T) {
	r, c := newFake(t, Options{})
	send, recv := r.Sensor(sSendMessage), r.Sensor(sReceive)
	p1 := r.Create(tProcess, "P1", nil)
	p2 := r.Create(tProcess, "P2", nil)
	m1 := r.Create(tMailbox, "M1", nil)
	m2 := r.Create(tMailbox, "M2", nil)
	s := r.Open()
	st := newStream(t, s)
	mustApply(t, s, enable(sSendMessage, tProcess, "P1"))
	mustApply(t, s, enable(sSendMessage, tProcess, "P2"))
	// When P1 sends to a mailbox, trace receives on that mailbox.
	trig := wire.Command{Kind: wire.CTrigger, ID: 7, On: uint16(sSendMessage), Attr: 1, Sensor: uint16(sReceive),
		Conds: []wire.Cond{{Attr: 0, Value: wire.Value{Kind: wire.VEntity, S: "P1"}}}}
	mustApply(t, s, trig)
	if err := s.Apply(&trig); !isCmdErr(err, "id") {
		t.Fatalf("duplicate trigger: %v", err)
	}
	ev(recv, Value{E: p2}, Value{E: m1}) // not yet
	ev(send, Value{E: p2}, Value{E: m1}) // delivered, but the condition fails
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P1", "P2"}})
	ev(send, Value{E: p1}, Value{E: m1}) // fires the trigger, synchronously
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P1", "P2"}, "Receive": {"M1"}})
	ev(recv, Value{E: p2}, Value{E: m1}) // enabled now
	ev(recv, Value{E: p2}, Value{E: m2}) // not
	ev(send, Value{E: p1}, Value{E: m1}) // once per entity: no second enable
	mustApply(t, s, wire.Command{Kind: wire.CUntrigger, ID: 7})
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P1", "P2"}})
	if recv.Armed() {
		t.Fatal("receive armed after untrigger")
	}
	ev(recv, Value{E: p2}, Value{E: m1})
	st.sync(r, c)
	var names []string
	for _, p := range st.take(false) {
		names = append(names, st.name(p))
	}
	if strings.Join(names, ",") != "1 P2 M1,1 P1 M1,1 P2 M1,1 P1 M1" {
		t.Fatalf("got %v", names)
	}

	// A trigger whose session does not get the On packet does nothing.
	mustApply(t, s, disable(sSendMessage, tProcess, "P1"))
	mustApply(t, s, trig)
	ev(send, Value{E: p1}, Value{E: m2})
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P2"}})
	// Own enable and trigger enable of the same entity count separately.
	mustApply(t, s, enable(sSendMessage, tProcess, "P1"))
	mustApply(t, s, enable(sReceive, tMailbox, "M2"))
	ev(send, Value{E: p1}, Value{E: m2})
	mustApply(t, s, disable(sReceive, tMailbox, "M2"))
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P1", "P2"}, "Receive": {"M2"}})
	s.Close()
	flagsEqual(t, r, map[string][]string{})
	if recv.Armed() || send.Armed() {
		t.Fatal("armed after close")
	}

	// Bad triggers.
	s2 := r.Open()
	for field, cmd := range map[string]wire.Command{
		"on":       {Kind: wire.CTrigger, On: uint16(sRunningOn), Sensor: uint16(sReceive)},
		"sensor":   {Kind: wire.CTrigger, On: uint16(sSendMessage), Sensor: uint16(sProcess)},
		"attr":     {Kind: wire.CTrigger, On: uint16(sSendMessage), Sensor: uint16(sReceive), Attr: 0},
		"conds[0]": {Kind: wire.CTrigger, On: uint16(sSendMessage), Sensor: uint16(sReceive), Attr: 1, Conds: []wire.Cond{{Attr: 0, Value: wire.Value{Kind: wire.VInt}}}},
	} {
		if err := s2.Apply(&cmd); !isCmdErr(err, field) {
			t.Errorf("%s: %v", field, err)
		}
	}
}

func TestEntityTrigger(t *testing.T) {
	// A trigger on an entity relation: trace a process's sends as soon as
	// it is created in state Running.
	r, c := newFake(t, Options{})
	send := r.Sensor(sSendMessage)
	m := r.Create(tMailbox, "M", nil)
	p0 := r.Create(tProcess, "P0", []Value{{N: 1}}) // Running before the trigger: enabled at install
	s := r.Open()
	st := newStream(t, s)
	mustApply(t, s, wire.Command{Kind: wire.CTrigger, ID: 1, On: uint16(sProcess), Attr: 0, Sensor: uint16(sSendMessage),
		Conds: []wire.Cond{{Attr: 1, Value: wire.Value{Kind: wire.VEnum, N: 1}}}})
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P0"}})
	p0.SetState([]Value{{N: 2}}) // from the first match on, whatever follows
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P0"}})
	p1 := r.Create(tProcess, "P1", []Value{{N: 0}})
	ev(send, Value{E: p1}, Value{E: m})
	p1.SetState([]Value{{N: 1}})
	ev(send, Value{E: p1}, Value{E: m})
	st.sync(r, c)
	got := st.take(false)
	if len(got) != 1 || st.name(got[0]) != "1 P1 M" {
		t.Fatalf("got %v", got)
	}
}

// TestWhileTrigger: a While trigger on an entity relation holds the enable
// exactly while the entity's tuple matches — from installation for an
// entity already matching, off when its state changes away or it ends,
// on again when it matches again.
func TestWhileTrigger(t *testing.T) {
	r, c := newFake(t, Options{})
	send := r.Sensor(sSendMessage)
	m := r.Create(tMailbox, "M", nil)
	p1 := r.Create(tProcess, "P1", []Value{{N: 1}}) // Running before the trigger
	p2 := r.Create(tProcess, "P2", []Value{{N: 0}})
	s := r.Open()
	st := newStream(t, s)
	running := []wire.Cond{{Attr: 1, Value: wire.Value{Kind: wire.VEnum, N: 1}}}
	mustApply(t, s, wire.Command{Kind: wire.CTrigger, ID: 1, On: uint16(sProcess), Attr: 0, Sensor: uint16(sSendMessage),
		Conds: running, While: true})
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P1"}})
	ev(send, Value{E: p1}, Value{E: m}) // 1: P1 Running
	ev(send, Value{E: p2}, Value{E: m}) // P2 Ready
	p1.SetState([]Value{{N: 2}})
	flagsEqual(t, r, map[string][]string{})
	ev(send, Value{E: p1}, Value{E: m}) // P1 Waiting
	p2.SetState([]Value{{N: 1}})
	ev(send, Value{E: p2}, Value{E: m}) // 2: P2 Running
	p1.SetState([]Value{{N: 1}})
	ev(send, Value{E: p1}, Value{E: m}) // 3: P1 Running again
	p1.Delete()
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P2"}})
	p3 := r.Create(tProcess, "P1", []Value{{N: 1}}) // the ID again, Running
	ev(send, Value{E: p3}, Value{E: m})             // 4
	st.sync(r, c)
	var names []string
	for _, p := range st.take(false) {
		names = append(names, st.name(p))
	}
	if strings.Join(names, ",") != "1 P1 M,1 P2 M,1 P1 M,1 P1 M" {
		t.Fatalf("got %v", names)
	}
	// An own enable outlives the trigger's; untrigger takes back the rest.
	mustApply(t, s, enable(sSendMessage, tProcess, "P2"))
	mustApply(t, s, wire.Command{Kind: wire.CUntrigger, ID: 1})
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P2"}})
	// While is for entity relations only.
	bad := wire.Command{Kind: wire.CTrigger, ID: 2, On: uint16(sSendMessage), Attr: 0, Sensor: uint16(sSendMessage), While: true}
	if err := s.Apply(&bad); !isCmdErr(err, "while") {
		t.Fatalf("while on a traced sensor: %v", err)
	}
	s.Close()
	flagsEqual(t, r, map[string][]string{})
}

func TestEntityPackets(t *testing.T) {
	r, c := newFake(t, Options{})
	cpu := r.Create(tProcessor, "CPU", nil)
	p1 := r.Create(tProcess, "P1", []Value{{N: 0}})
	t1 := c.t.Load()
	s := r.Open()
	st := newStream(t, s)
	st.sync(r, c)
	got := st.take(true)
	if len(got) != 2 || got[0].Kind != wire.PEntityBegin || got[0].TS > got[1].TS || got[1].TS > t1 {
		t.Fatalf("snapshot %v", got)
	}
	p1.SetState([]Value{{N: 1}})
	cpu.Delete()
	cpu.Delete()
	p2 := r.Create(tProcess, "P2", []Value{{N: 2}})
	p2.Delete()
	st.sync(r, c)
	got = st.take(true)
	var names []string
	for _, p := range got {
		names = append(names, st.name(p))
	}
	if strings.Join(names, ",") != "7 P1 0,6 P1 1,7 CPU,6 P2 2,7 P2 2" {
		t.Fatalf("got %v", names)
	}
	if got[0].TS != got[1].TS || got[0].Tuple == got[1].Tuple || got[0].Begin == 0 {
		t.Fatalf("state change %+v %+v", got[0], got[1])
	}
	if d := st.defs[got[3].Vals[0].N]; d.ID != "P2" || d.Type != uint16(tProcess) {
		t.Fatalf("def %+v", d)
	}
	if p2.seen.Load()&s.bit != 0 {
		t.Fatal("deleted entity still in the session's seen set")
	}
}

func TestTracedInterval(t *testing.T) {
	r, c := newFake(t, Options{})
	hold := r.Sensor(sHolding)
	p1 := r.Create(tProcess, "P1", nil)
	m := r.Create(tMailbox, "M", nil)
	s := r.Open()
	st := newStream(t, s)
	mustApply(t, s, enable(sHolding, tProcess, "P1"))
	v := []Value{{E: p1}, {E: m}, {S: "note one"}}
	iv := hold.Begin(v)
	if !iv.Sent || iv.ID == 0 {
		t.Fatalf("begin %+v", iv)
	}
	mustApply(t, s, disable(sHolding, tProcess, "P1"))
	if hold.Armed() {
		t.Fatal("armed")
	}
	hold.End(iv, v) // its begin was sent: its end goes too
	// Begun disarmed, then enabled: the enable sends a late begin (stamped
	// then, carrying when it began: beginOpen), and its end follows.
	v2 := []Value{{E: p1}, {E: m}, {S: "note two"}}
	iv2 := hold.Begin(v2)
	if iv2.Sent || iv2.Begin == 0 {
		t.Fatalf("begin %+v", iv2)
	}
	mustApply(t, s, enable(sHolding, tProcess, "P1"))
	hold.End(iv2, v2)
	// Begun disarmed, enabled (a late begin), disabled before its end: the
	// session is still owed its end.
	mustApply(t, s, disable(sHolding, tProcess, "P1"))
	v3 := []Value{{E: p1}, {E: m}, {S: "note three"}}
	iv3 := hold.Begin(v3)
	mustApply(t, s, enable(sHolding, tProcess, "P1"))
	mustApply(t, s, disable(sHolding, tProcess, "P1"))
	hold.End(iv3, v3)
	st.sync(r, c)
	got := st.take(false)
	if len(got) != 6 {
		t.Fatalf("got %v", got)
	}
	if got[0].Kind != wire.PBegin || got[0].Begin != 0 || got[1].Kind != wire.PEnd || got[1].Tuple != got[0].Tuple || got[1].Begin != got[0].TS || got[1].Vals[2].S != "note one" {
		t.Fatalf("first interval %+v %+v", got[0], got[1])
	}
	for i, c := range []struct {
		iv   Interval
		note string
	}{{iv2, "note two"}, {iv3, "note three"}} {
		b, e := got[2+2*i], got[3+2*i]
		if b.Kind != wire.PBegin || b.Begin != c.iv.Begin || b.TS <= c.iv.Begin || b.Tuple != c.iv.ID || b.Vals[2].S != c.note {
			t.Fatalf("%s: late begin %+v", c.note, b)
		}
		if e.Kind != wire.PEnd || e.Begin != c.iv.Begin || e.Tuple != c.iv.ID || e.TS < b.TS || e.Vals[2].S != c.note {
			t.Fatalf("%s: end %+v", c.note, e)
		}
	}
}

func TestDRearm(t *testing.T) {
	r, c := newFake(t, Options{})
	wait := r.Sensor(sWaiting)
	p1 := r.Create(tProcess, "P1", nil)
	m1 := r.Create(tMailbox, "M1", nil)
	m2 := r.Create(tMailbox, "M2", nil)
	s := r.Open()
	st := newStream(t, s)
	mustApply(t, s, enable(sWaiting, tMailbox, "M1"))
	var begins []int64
	for i := 0; i < 3; i++ {
		v := []Value{{E: p1}, {E: m1}}
		iv := wait.Begin(v)
		if iv.Sent {
			t.Fatal("a D sensor sent at Begin")
		}
		begins = append(begins, iv.Begin)
		wait.End(iv, v)
		// fired, and re-armed at once: the flag is still there
		flagsEqual(t, r, map[string][]string{"Waiting": {"M1"}})
	}
	v := []Value{{E: p1}, {E: m2}}
	wait.End(wait.Begin(v), v)           // not enabled
	ev(wait, Value{E: p1}, Value{E: m1}) // an event on a D sensor: fires, re-armed
	ev(wait, Value{E: p1}, Value{E: m1})
	flagsEqual(t, r, map[string][]string{"Waiting": {"M1"}})
	st.sync(r, c)
	got := st.take(false)
	if len(got) != 5 || got[3].Kind != wire.PEvent || got[4].Kind != wire.PEvent {
		t.Fatalf("got %v", got)
	}
	for i, p := range got[:3] {
		if p.Kind != wire.PWhole || p.Begin != begins[i] || p.TS <= p.Begin || p.Tuple == 0 {
			t.Fatalf("packet %d: %+v", i, p)
		}
	}
}

func TestSampling(t *testing.T) {
	const sec = int64(1e9)
	r, c := newFake(t, Options{})
	r.autoSample.Store(false)
	run := r.Sensor(sRunningOn)
	c.set(sec / 10)
	cpu1 := r.Create(tProcessor, "CPU1", nil)
	cpu2 := r.Create(tProcessor, "CPU2", nil)
	p1 := r.Create(tProcess, "P1", nil)
	p2 := r.Create(tProcess, "P2", nil)
	p3 := r.Create(tProcess, "P3", nil)
	s := r.Open()
	st := newStream(t, s)
	c.set(2 * sec / 10)
	mustApply(t, s, wire.Command{Kind: wire.CSample, ID: 1, Sensor: uint16(sRunningOn), All: true, Period: sec})
	mustApply(t, s, wire.Command{Kind: wire.CSample, ID: 2, Sensor: uint16(sRunningOn), Type: uint16(tProcessor), Entity: "CPU2", Period: 2 * sec})
	c.set(5 * sec / 10)
	a := run.StateBegin([]Value{{E: p1}, {E: cpu1}})
	c.set(7 * sec / 10)
	b := run.StateBegin([]Value{{E: p2}, {E: cpu1}})
	c.set(sec + 5*sec/100)
	cc := run.StateBegin([]Value{{E: p3}, {E: cpu2}})
	c.set(sec + 3*sec/10)
	run.StateEnd(b, nil) // after the 1 s tick, before it ran: in the grace log
	bEnd := c.t.Load()
	c.set(sec + 4*sec/10)
	// The tick at 1 s has not run: the watermark stays below it.
	st.until(sec - 1)
	for i := 0; i < 3; i++ {
		b, err := s.Recv(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.add(b); err != nil {
			t.Fatal(err)
		}
	}
	if st.lastW >= sec {
		t.Fatalf("watermark %d passed a pending tick", st.lastW)
	}
	r.sampleDue()
	c.set(sec + 5*sec/10)
	run.StateEnd(a, nil) // reported: PEnd now
	aEnd := c.t.Load()
	c.set(2*sec + 5*sec/10)
	r.sampleDue() // tick 2 s: both requests, C once
	c.set(2*sec + 7*sec/10)
	run.StateEnd(cc, nil)
	cEnd := c.t.Load()
	st.sync(r, c)
	got := st.take(false)
	type want struct {
		kind  wire.PacketKind
		ts    int64
		tuple uint64
		begin int64
		name  string
	}
	wants := []want{
		{wire.PSample, sec, a.ID, a.Begin, "5 P1 CPU1"},
		{wire.PSample, sec, b.ID, b.Begin, "5 P2 CPU1"},
		{wire.PEnd, bEnd, b.ID, b.Begin, "3 P2 CPU1"},
		{wire.PEnd, aEnd, a.ID, a.Begin, "3 P1 CPU1"},
		{wire.PSample, 2 * sec, cc.ID, cc.Begin, "5 P3 CPU2"},
		{wire.PEnd, cEnd, cc.ID, cc.Begin, "3 P3 CPU2"},
	}
	if len(got) != len(wants) {
		for _, p := range got {
			t.Log(st.name(p), p.TS)
		}
		t.Fatalf("got %d packets, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		p := got[i]
		if p.Kind != w.kind || p.TS != w.ts || p.Tuple != w.tuple || p.Begin != w.begin || st.name(p) != w.name {
			t.Errorf("packet %d: %s %+v, want %+v", i, st.name(p), p, w)
		}
	}
	mustApply(t, s, wire.Command{Kind: wire.CUnsample, ID: 1})
	mustApply(t, s, wire.Command{Kind: wire.CUnsample, ID: 2})
	if err := s.Apply(&wire.Command{Kind: wire.CUnsample, ID: 2}); !isCmdErr(err, "id") {
		t.Fatalf("unsample twice: %v", err)
	}
	if err := s.Apply(&wire.Command{Kind: wire.CSample, ID: 3, Sensor: uint16(sSendMessage), All: true}); !isCmdErr(err, "sensor") {
		t.Fatalf("sample a traced sensor: %v", err)
	}
	if n := len(run.st.grace); n != 0 {
		t.Fatalf("grace log keeps %d tuples with no sampler", n)
	}
}

func TestLeaseExpiry(t *testing.T) {
	r, c := newFake(t, Options{})
	r.Create(tProcess, "P1", nil)
	s := r.Open()
	mustApply(t, s, enable(sSendMessage, tProcess, "P1"))
	mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sReceive)})
	mustApply(t, s, wire.Command{Kind: wire.CLease, Period: 1e9})
	if err := s.Apply(&wire.Command{Kind: wire.CLease}); !isCmdErr(err, "period") {
		t.Fatalf("zero lease: %v", err)
	}
	c.advance(5e8)
	mustApply(t, s, wire.Command{Kind: wire.CLease, Period: 1e9}) // renewed
	c.advance(9e8)
	time.Sleep(20 * time.Millisecond)
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P1"}, "Receive": {"*"}})
	c.advance(2e8)
	err := newStream(t, s).toEnd()
	if !errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("recv: %v", err)
	}
	flagsEqual(t, r, map[string][]string{})
	if r.Sensor(sSendMessage).Armed() || r.Sensor(sReceive).Armed() {
		t.Fatal("armed after lease expiry")
	}
	// The default lease is 10 s.
	s2 := r.Open()
	mustApply(t, s2, enable(sSendMessage, tProcess, "P1"))
	c.advance(9e9)
	time.Sleep(20 * time.Millisecond)
	flagsEqual(t, r, map[string][]string{"SendMessage": {"P1"}})
	c.advance(2e9)
	if err := newStream(t, s2).toEnd(); !errors.Is(err, ErrLeaseExpired) {
		t.Fatalf("recv: %v", err)
	}
	flagsEqual(t, r, map[string][]string{})
}

func TestCommandErrors(t *testing.T) {
	r, _ := newFake(t, Options{})
	s := r.Open()
	for _, tc := range []struct {
		cmd   wire.Command
		field string
	}{
		{wire.Command{Kind: wire.CEnable, Sensor: 99, Entity: "P1"}, "sensor"},
		{wire.Command{Kind: wire.CEnable, Sensor: uint16(sRunningOn), Type: uint16(tProcessor), Entity: "C"}, "sensor"},
		{wire.Command{Kind: wire.CEnable, Sensor: uint16(sProcess), Type: uint16(tProcess), Entity: "P1"}, "sensor"},
		{wire.Command{Kind: wire.CEnable, Sensor: uint16(sSendMessage), Type: uint16(tMailbox), Entity: "M"}, "type"},
		{wire.Command{Kind: wire.CEnable, Sensor: uint16(sSendMessage), Type: 42, Entity: "M"}, "type"},
		{wire.Command{Kind: wire.CEnable, Sensor: uint16(sSendMessage), Type: uint16(tProcess)}, "entity"},
		{wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sRunningOn)}, "sensor"},
		{wire.Command{Kind: wire.CSample, Sensor: uint16(sRunningOn), Type: uint16(tProcess), Entity: "P1"}, "type"},
		{wire.Command{Kind: wire.CSample, Sensor: uint16(sRunningOn), All: true, Period: -1}, "period"},
		{wire.Command{Kind: wire.CSample, Sensor: uint16(sRunningOn), All: true, Period: 10}, "period"},
		{wire.Command{Kind: wire.CUntrigger, ID: 5}, "id"},
		{wire.Command{Kind: 200}, "kind"},
	} {
		err := s.Apply(&tc.cmd)
		if !isCmdErr(err, tc.field) {
			t.Errorf("%+v: %v, want an error on %s", tc.cmd, err, tc.field)
			continue
		}
		if !strings.HasPrefix(err.Error(), "resident: command ") {
			t.Errorf("error %q is not positioned", err)
		}
	}
	err := s.Apply(&wire.Command{Kind: wire.CEnable, Sensor: uint16(sSendMessage), Type: uint16(tMailbox), Entity: "M"})
	if want := "resident: command 13 (enable): type: SendMessage's flag holder is a Process, not a Mailbox"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	flagsEqual(t, r, map[string][]string{})
}

func TestTooManySessions(t *testing.T) {
	r, _ := newFake(t, Options{})
	var ss []*Session
	for i := 0; i < MaxSessions; i++ {
		ss = append(ss, r.Open())
	}
	extra := r.Open()
	if _, err := extra.Recv(context.Background()); !errors.Is(err, ErrTooManySessions) {
		t.Fatalf("recv: %v", err)
	}
	ss[3].Close()
	s := r.Open()
	if s.idx != 3 {
		t.Fatalf("index %d", s.idx)
	}
}

// A closed session's packets never reach the session that takes its index.
func TestSessionIndexReuse(t *testing.T) {
	r, c := newFake(t, Options{})
	send := r.Sensor(sSendMessage)
	p := r.Create(tProcess, "P", nil)
	m := r.Create(tMailbox, "M", nil)
	var ss []*Session
	for i := 0; i < MaxSessions; i++ {
		ss = append(ss, r.Open())
	}
	old := ss[5]
	mustApply(t, old, enable(sSendMessage, tProcess, "P"))
	r.dmu.Lock() // hold the drain off so the packet is still in the ring
	ev(send, Value{E: p}, Value{E: m})
	go func() { time.Sleep(10 * time.Millisecond); r.dmu.Unlock() }()
	old.Close()
	nw := r.Open()
	if nw.idx != 5 {
		t.Fatalf("index %d", nw.idx)
	}
	st := newStream(t, nw)
	st.sync(r, c)
	if got := st.take(false); len(got) != 0 {
		t.Fatalf("new session got %v", got)
	}
}

func TestLocalConn(t *testing.T) {
	r, c := newFake(t, Options{Name: "local"})
	p := r.Create(tProcess, "P", nil)
	m := r.Create(tMailbox, "M", nil)
	conn := r.Local()
	if conn.Hello().Name != "local" {
		t.Fatal("hello")
	}
	if err := conn.Send(&wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)}); err != nil {
		t.Fatal(err)
	}
	ev(r.Sensor(sSendMessage), Value{E: p}, Value{E: m})
	c.advance(1000)
	n := 0
	for n < 3 {
		b, err := conn.Recv()
		if err != nil {
			t.Fatal(err)
		}
		n += len(b.Packets)
	}
	conn.Close()
	if _, err := conn.Recv(); !errors.Is(err, ErrClosed) {
		t.Fatalf("recv after close: %v", err)
	}
	if err := conn.Send(&wire.Command{Kind: wire.CLease, Period: 1}); err == nil {
		t.Fatal("send after close")
	}
}

func TestBye(t *testing.T) {
	r, _ := newFake(t, Options{})
	r.Create(tProcess, "P", nil)
	s := r.Open()
	mustApply(t, s, enable(sSendMessage, tProcess, "P"))
	mustApply(t, s, wire.Command{Kind: wire.CBye})
	flagsEqual(t, r, map[string][]string{})
	if _, err := s.Recv(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("recv: %v", err)
	}
}

// Drop accounting: with a tiny ring and concurrent producers, every
// wanted packet is delivered or counted as dropped.
func TestDropAccounting(t *testing.T) {
	r := New(testSpec(), Options{Slots: 8})
	send, hold := r.Sensor(sSendMessage), r.Sensor(sHolding)
	m := r.Create(tMailbox, "M", nil)
	s := r.Open()
	mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
	mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sHolding)})
	const workers, each = 8, 20000
	st := newStream(t, s)
	done := make(chan error, 1)
	go func() { done <- st.toEnd() }()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := r.Create(tProcess, "P", nil)
			for i := 0; i < each; i++ {
				ev(send, Value{E: p}, Value{E: m})
				if i%4 == 0 {
					v := []Value{{E: p}, {E: m}, {S: "x"}}
					hold.End(hold.Begin(v), v)
				}
			}
			p.Delete()
		}()
	}
	wg.Wait()
	r.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("stream ended with %v", err)
	}
	delivered := map[uint16]uint64{}
	for _, p := range st.pkts {
		delivered[p.Sensor]++
	}
	for _, sid := range []SensorID{sSendMessage, sHolding, sProcess, sMailbox} {
		c := st.counts[uint16(sid)]
		if delivered[uint16(sid)]+c.Drops != c.Wanted {
			t.Errorf("sensor %d: delivered %d + dropped %d != wanted %d", sid, delivered[uint16(sid)], c.Drops, c.Wanted)
		}
	}
	if c := st.counts[uint16(sSendMessage)]; c.Wanted != workers*each || c.Drops == 0 {
		t.Errorf("SendMessage counts %+v, want %d wanted and some drops", c, workers*each)
	}
	// Entity packets have the ring's reserve, but never wait for room:
	// with a ring this small they may be dropped too, and are counted.
	if c := st.counts[uint16(sProcess)]; c.Wanted != 2*workers {
		t.Errorf("entity packets %+v: want %d wanted", c, 2*workers)
	}
	t.Logf("SendMessage %+v, Holding %+v", st.counts[uint16(sSendMessage)], st.counts[uint16(sHolding)])
}

// The watermark rule under concurrency: many producers (events,
// intervals, entities, sampled state), every batch sorted and after the
// previous watermark.
func TestWatermark(t *testing.T) {
	r := New(testSpec(), Options{})
	defer r.Close()
	send, hold, run := r.Sensor(sSendMessage), r.Sensor(sHolding), r.Sensor(sRunningOn)
	m := r.Create(tMailbox, "M", nil)
	cpu := r.Create(tProcessor, "CPU", nil)
	sessions := []*Session{r.Open(), r.Open()}
	for _, s := range sessions {
		mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
		mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sHolding)})
		mustApply(t, s, wire.Command{Kind: wire.CSample, ID: 1, Sensor: uint16(sRunningOn), All: true, Period: 3e6})
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, len(sessions))
	streams := make([]*stream, len(sessions))
	for i, s := range sessions {
		streams[i] = newStream(t, s)
		go func(st *stream) {
			for {
				b, err := st.s.Recv(ctx)
				if err != nil {
					errs <- nil
					return
				}
				if err := st.add(b); err != nil {
					errs <- err
					return
				}
			}
		}(streams[i])
	}
	stop := time.Now().Add(300 * time.Millisecond)
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				p := r.Create(tProcess, "P", nil)
				ev(send, Value{E: p}, Value{E: m})
				v := []Value{{E: p}, {E: m}, {S: "n"}}
				iv := hold.Begin(v)
				sv := []Value{{E: p}, {E: cpu}}
				si := run.StateBegin(sv)
				ev(send, Value{E: p}, Value{E: m})
				hold.End(iv, v)
				if i%3 == 0 {
					time.Sleep(time.Microsecond)
				}
				run.StateEnd(si, sv)
				p.Delete()
			}
		}(w)
	}
	wg.Wait()
	time.Sleep(50 * time.Millisecond)
	cancel()
	for range sessions {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, st := range streams {
		kinds := map[wire.PacketKind]int{}
		for _, p := range st.pkts {
			kinds[p.Kind]++
		}
		if kinds[wire.PEvent] == 0 || kinds[wire.PBegin] == 0 || kinds[wire.PEntityBegin] == 0 {
			t.Errorf("session %d: packets by kind %v", i, kinds)
		}
		t.Logf("session %d: %d batches, packets by kind %v", i, st.batches, kinds)
	}
}

// The truth sink sees every tuple, with the timestamps packets carry.
func TestTruth(t *testing.T) {
	tl := newTruth()
	r, c := newFake(t, Options{Truth: tl})
	send, hold, wait, run := r.Sensor(sSendMessage), r.Sensor(sHolding), r.Sensor(sWaiting), r.Sensor(sRunningOn)
	for _, s := range r.sensors {
		if !s.Armed() {
			t.Fatalf("%s not armed with a truth sink", s.spec.Name)
		}
	}
	p1 := r.Create(tProcess, "P1", []Value{{N: 0}})
	p2 := r.Create(tProcess, "P2", []Value{{N: 0}})
	m := r.Create(tMailbox, "M", nil)
	cpu := r.Create(tProcessor, "CPU", nil)
	s := r.Open()
	st := newStream(t, s)
	mustApply(t, s, enable(sSendMessage, tProcess, "P1"))
	mustApply(t, s, enable(sHolding, tProcess, "P1"))
	mustApply(t, s, enable(sWaiting, tMailbox, "M"))
	ev(send, Value{E: p1}, Value{E: m})
	ev(send, Value{E: p2}, Value{E: m}) // truth only
	for _, p := range []*Entity{p1, p2} {
		v := []Value{{E: p}, {E: m}, {S: "n"}}
		hold.End(hold.Begin(v), v)
		wv := []Value{{E: p}, {E: m}}
		wait.End(wait.Begin(wv), wv)
	}
	sv := []Value{{E: p1}, {E: cpu}}
	run.End(run.StateBegin(sv), sv) // wrong call: End on a sampled sensor does nothing
	run.StateEnd(run.StateBegin(sv), sv)
	p1.SetState([]Value{{N: 1}})
	p2.Delete()
	st.sync(r, c)
	got := st.take(true)

	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.events) != 2 || tl.events[1].vals[0].E != p2 {
		t.Fatalf("truth events %+v", tl.events)
	}
	// entities: 4 creates + 1 new state = 5 begins; hold 2, wait 2, run 2
	if len(tl.begins) != 11 {
		t.Fatalf("truth begins %d", len(tl.begins))
	}
	// hold 2, wait 2, RunningOn 1 (StateEnd), P1's state change, P2's deletion
	if len(tl.ends) != 7 {
		t.Fatalf("truth ends %d", len(tl.ends))
	}
	for _, p := range got {
		switch p.Kind {
		case wire.PEvent:
			if p.TS != tl.events[0].at {
				t.Errorf("event at %d, truth %d", p.TS, tl.events[0].at)
			}
		case wire.PBegin, wire.PEntityBegin:
			if b, ok := tl.begins[p.Tuple]; !ok || b.at != p.TS || b.s != SensorID(p.Sensor) {
				t.Errorf("begin %+v, truth %+v", p, b)
			}
		case wire.PEnd, wire.PWhole, wire.PEntityEnd:
			if e, ok := tl.ends[p.Tuple]; !ok || e != p.TS {
				t.Errorf("end %+v, truth %d (%v)", p, e, ok)
			}
			if b := tl.begins[p.Tuple]; b.at != p.Begin && p.Kind != wire.PEntityEnd {
				t.Errorf("end %+v begin, truth %d", p, b.at)
			}
		}
	}
	kinds := map[wire.PacketKind]int{}
	for _, p := range got {
		kinds[p.Kind]++
	}
	if kinds[wire.PEvent] != 1 || kinds[wire.PBegin] != 1 || kinds[wire.PEnd] != 1 || kinds[wire.PWhole] != 2 || kinds[wire.PEntityEnd] != 2 {
		t.Fatalf("packets by kind %v", kinds)
	}
}

// Packets of up to 8 values (several ring slots each) round-trip, for
// every packet shape, with the ring wrapping many times.
func TestWidePackets(t *testing.T) {
	r, c := newFake(t, Options{Slots: 16})
	wide, span := r.Sensor(sWide), r.Sensor(sWideSpan)
	p := r.Create(tProcess, "P", nil)
	m := r.Create(tMailbox, "M", nil)
	s := r.Open()
	st := newStream(t, s)
	mustApply(t, s, enable(sWide, tProcess, "P"))
	mustApply(t, s, enable(sWideSpan, tProcess, "P"))
	vals := func(i int) []Value {
		return []Value{{N: uint64(i)}, {E: p}, {S: fmt.Sprint("s", i)}, {N: uint64(i) << 40}, {E: m}, {N: 1}, {S: ""}, {N: uint64(1000 + i)}}
	}
	want := func(pk wire.Packet, i int) {
		t.Helper()
		got := st.name(pk)
		exp := fmt.Sprintf("%d %d P s%d %d M 1  %d", pk.Kind, i, i, uint64(i)<<40, 1000+i)
		if got != exp {
			t.Fatalf("packet %q, want %q", got, exp)
		}
	}
	for i := 0; i < 40; i++ {
		ev(wide, vals(i)...)
		iv := span.Begin(vals(i))
		span.End(iv, vals(i))
		st.sync(r, c) // 14 slots an iteration: keep the 16-slot ring from filling
	}
	st.sync(r, c)
	got := st.take(false)
	if len(got) != 120 {
		t.Fatalf("got %d packets", len(got))
	}
	for i := 0; i < 40; i++ {
		want(got[3*i], i)
		want(got[3*i+1], i)
		want(got[3*i+2], i)
		if got[3*i+1].Kind != wire.PBegin || got[3*i+2].Kind != wire.PEnd || got[3*i+2].Begin != got[3*i+1].TS || got[3*i+2].Tuple != got[3*i+1].Tuple {
			t.Fatalf("interval %d: %+v %+v", i, got[3*i+1], got[3*i+2])
		}
	}
	if d := r.Sensor(sWide).drops.Load() + r.Sensor(sWideSpan).drops.Load(); d != 0 {
		t.Fatalf("%d drops", d)
	}
}

// A sampler too far behind skips ticks: only the samples of tuples the
// skip hid — valid at a skipped tick, never reported, ended before the
// first tick that runs — count as lost; a tuple open throughout (the
// ticks that run re-confirm it), one reported before the skip, and one
// ended after the first running tick but before it ran (the grace log)
// lose nothing. Before, the skip counted as lost as many samples as the
// first tick that ran gave, times the ticks skipped (here 300, not 3).
func TestSamplerSkipCountsHiddenTuples(t *testing.T) {
	const P = minSamplePeriod
	r, c := newFake(t, Options{})
	r.autoSample.Store(false)
	run := r.Sensor(sRunningOn)
	cpu := r.Create(tProcessor, "CPU", nil)
	ps := make([]*Entity, 4)
	for i := range ps {
		ps[i] = r.Create(tProcess, fmt.Sprint("P", i), nil)
	}
	s := r.Open()
	st := newStream(t, s)
	c.set(P / 10)
	mustApply(t, s, wire.Command{Kind: wire.CSample, ID: 1, Sensor: uint16(sRunningOn), All: true, Period: P})
	at := func(ticks float64) { c.set(int64(ticks * float64(P))) }
	at(0.2)
	run.StateBegin([]Value{{E: ps[0]}, {E: cpu}}) // A: open throughout
	at(0.3)
	d := run.StateBegin([]Value{{E: ps[1]}, {E: cpu}}) // D: reported at tick 1
	at(1.5)
	r.sampleDue() // tick 1: A, D
	at(10.5)
	b := run.StateBegin([]Value{{E: ps[2]}, {E: cpu}}) // B: hidden, valid at ticks 11–13
	at(13.5)
	run.StateEnd(b, nil)
	at(50.5)
	run.StateEnd(d, nil) // D ends inside the skipped span: its PEnd goes now
	at(90.5)
	cc := run.StateBegin([]Value{{E: ps[3]}, {E: cpu}}) // C: valid at tick 102, the first that runs
	at(102.2)
	run.StateEnd(cc, nil)
	// Ticks 2 … 101+maxCatchUp are due: 2 … 101 are skipped.
	at(101 + maxCatchUp + 0.5)
	for range 100 {
		r.sampleDue()
	}
	st.sync(r, c)
	n, got := st.delivered(sRunningOn), st.counts[uint16(sRunningOn)]
	t.Logf("RunningOn: delivered %d, dropped %d, wanted %d", n, got.Drops, got.Wanted)
	if got.Drops != 3 || n+got.Drops != got.Wanted {
		t.Errorf("RunningOn: delivered %d + dropped %d, wanted %d: want 3 dropped (B at ticks 11, 12, 13), exact counts", n, got.Drops, got.Wanted)
	}
}
