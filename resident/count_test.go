package resident

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/wire"
)

// countCmd is a counting trigger on SendMessage's Mailbox enabling
// Waiting: n sends within window.
func countCmd(id uint64, n uint32, window int64) wire.Command {
	return wire.Command{Kind: wire.CTrigger, ID: id, On: uint16(sSendMessage), Attr: 1, Sensor: uint16(sWaiting), Count: n, Period: window}
}

// TestCountTrigger: a counting trigger enables its target for a mailbox
// in the send that makes 3 sends within 100 ns (inclusive), and no
// earlier; sends outside the window do not count; an untrigger takes the
// enables back; the arguments a counter cannot honour are refused.
func TestCountTrigger(t *testing.T) {
	r, c := newFake(t, Options{})
	send := r.Sensor(sSendMessage)
	p := r.Create(tProcess, "P", []Value{{N: 1}})
	m1 := r.Create(tMailbox, "M1", nil)
	m2 := r.Create(tMailbox, "M2", nil)
	s := r.Open()
	mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
	mustApply(t, s, countCmd(1, 3, 100))
	at := func(ts int64, m *Entity) {
		c.set(ts - 1) // the packet's stamp is the clock's next tick: ts
		ev(send, Value{E: p}, Value{E: m})
	}
	at(1000, m1)
	at(1050, m1)
	at(1151, m1) // 1000 is out of [1051, 1151]
	flagsEqual(t, r, map[string][]string{"SendMessage": {"*"}})
	at(1160, m2)
	at(1200, m1) // 1050 out of [1100, 1200]: 1151, 1200 only
	flagsEqual(t, r, map[string][]string{"SendMessage": {"*"}})
	at(1251, m1) // [1151, 1251]: 1151, 1200, 1251 — the bound itself counts
	flagsEqual(t, r, map[string][]string{"SendMessage": {"*"}, "Waiting": {"M1"}})
	at(1255, m2)
	at(1260, m2) // [1160, 1260]
	flagsEqual(t, r, map[string][]string{"SendMessage": {"*"}, "Waiting": {"M1", "M2"}})
	mustApply(t, s, wire.Command{Kind: wire.CUntrigger, ID: 1})
	flagsEqual(t, r, map[string][]string{"SendMessage": {"*"}})

	// For ever (Period 0): the n-th send whenever.
	mustApply(t, s, countCmd(2, 2, 0))
	at(5000, m1)
	at(900_000, m1)
	flagsEqual(t, r, map[string][]string{"SendMessage": {"*"}, "Waiting": {"M1"}})

	for _, bad := range []struct {
		cmd   wire.Command
		field string
	}{
		{countCmd(3, wire.MaxCount+1, 100), "count"},
		{countCmd(3, 2, -1), "period"},
		{wire.Command{Kind: wire.CTrigger, ID: 3, On: uint16(sWaiting), Attr: 1, Sensor: uint16(sWaiting), Count: 2}, "on"},
		{wire.Command{Kind: wire.CTrigger, ID: 3, On: uint16(sProcess), Attr: 0, Sensor: uint16(sSendMessage), Count: 2, While: true}, "on"},
	} {
		if err := s.Apply(&bad.cmd); !isCmdErr(err, bad.field) {
			t.Errorf("%+v: %v, want an error on %s", bad.cmd, err, bad.field)
		}
	}
	s.Close()
	flagsEqual(t, r, map[string][]string{})
}

// TestCountTriggerBound tries to break the counting trigger's bound: sends
// to 5,000 mailboxes, each once, in a window that keeps them all. The
// trigger counts at most maxCountKeys of them; each one it has no room
// for is enabled at once (a superset: exact, never late); the full table
// is scanned once, not on every newcomer; and when the window has passed,
// the stale counts make room again.
func TestCountTriggerBound(t *testing.T) {
	r, c := newFake(t, Options{})
	send := r.Sensor(sSendMessage)
	p := r.Create(tProcess, "P", []Value{{N: 1}})
	s := r.Open()
	mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
	const window = int64(time.Hour)
	mustApply(t, s, countCmd(1, wire.MaxCount, window))
	tr := s.triggers[1]
	const n = 5000
	ms := make([]*Entity, n)
	for i := range ms {
		ms[i] = r.Create(tMailbox, fmt.Sprint("M", i), nil)
		ev(send, Value{E: p}, Value{E: ms[i]})
		if k := len(tr.count.keys); k > maxCountKeys {
			t.Fatalf("after %d mailboxes the trigger counts %d (at most %d)", i+1, k, maxCountKeys)
		}
	}
	if got, want := tr.count.overflowed, uint64(n-maxCountKeys); got != want {
		t.Fatalf("%d mailboxes enabled for want of room, want %d", got, want)
	}
	if got := len(r.Flags()["Waiting"]); got != n-maxCountKeys {
		t.Fatalf("Waiting enabled for %d mailboxes, want %d (those not counted)", got, n-maxCountKeys)
	}
	if tr.count.noPruneBefore <= c.t.Load() {
		t.Fatalf("a full table of fresh counts is rescanned for the next newcomer")
	}
	// Past the window every count is stale: a newcomer is counted again.
	c.advance(window + 2)
	x := r.Create(tMailbox, "late", nil)
	ev(send, Value{E: p}, Value{E: x})
	if k, o := len(tr.count.keys), tr.count.overflowed; k != 1 || o != n-maxCountKeys {
		t.Fatalf("after the window: %d counted, %d overflowed; want 1 and %d", k, o, n-maxCountKeys)
	}
}

// whileCountCmd is countCmd holding the enable only while the count is.
func whileCountCmd(id uint64, n uint32, window int64) wire.Command {
	c := countCmd(id, n, window)
	c.While = true
	return c
}

// fakeManual is a resident on a fake clock whose drain rounds the test
// runs (r.round), closed when the test ends.
func fakeManual(t *testing.T) (*Resident, *fakeClock) {
	c := &fakeClock{}
	r := newResident(testSpec(), Options{Clock: c.now, Wall: func() int64 { return 0 }, Slots: 1024})
	close(r.drainDone)
	r.autoSample.Store(false) // a round's first clock read is expireCounts'
	t.Cleanup(r.Close)
	return r, c
}

// whileRig is the while counting tests' resident (fakeManual): a
// process P, mailboxes M1 and M2, a session with SendMessage enabled and
// a while counting trigger enabling Waiting at 3 sends within 100 ns.
func whileRig(t *testing.T) (*Resident, *fakeClock, *Session, *stream, *Entity, *Entity, *Entity) {
	r, c := fakeManual(t)
	p := r.Create(tProcess, "P", []Value{{N: 1}})
	m1 := r.Create(tMailbox, "M1", nil)
	m2 := r.Create(tMailbox, "M2", nil)
	s := r.Open()
	st := newStream(t, s)
	mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
	mustApply(t, s, whileCountCmd(1, 3, 100))
	return r, c, s, st, p, m1, m2
}

// TestCountWhileDisables: a while counting trigger (3 sends within 100
// ns) enables Waiting on M1 in the send that makes the count, keeps it
// through a drain round whose clock reads the last instant the count
// holds (U − 1), and loses it in the round that reads U (the oldest send
// out of the inclusive window), never before. Waits on M1: one in
// progress before M1 was busy and one begun while it was, both ending
// after the disable, are still sent (owed their end); one begun after
// the disable is not; one begun and ended after M1 is busy again is. A
// trigger without While on M2 keeps its enable through every round.
func TestCountWhileDisables(t *testing.T) {
	r, c, s, st, p, m1, m2 := whileRig(t)
	send, wait := r.Sensor(sSendMessage), r.Sensor(sWaiting)
	round := func() { r.round(false) } // its first clock read: expireCounts
	hold := countCmd(2, 2, 100)
	hold.Conds = []wire.Cond{{Attr: 1, Value: wire.Value{Kind: wire.VEntity, S: "M2"}}}
	mustApply(t, s, hold)
	at := func(ts int64) { c.set(ts - 1) } // the next clock read is ts
	sendAt := func(ts int64, m *Entity) {
		at(ts)
		ev(send, Value{E: p}, Value{E: m})
	}
	type waitIv struct {
		iv   Interval
		vals []Value
	}
	begin := func(ts int64, m *Entity) waitIv {
		at(ts)
		v := []Value{{E: p}, {E: m}}
		return waitIv{wait.Begin(v), v}
	}
	end := func(ts int64, w waitIv) {
		at(ts)
		wait.End(w.iv, w.vals)
	}
	before := begin(900, m1) // in progress when M1 becomes busy
	sendAt(1000, m1)
	sendAt(1050, m1)
	sendAt(1060, m1) // [960, 1060]: 3 — busy until 1000 leaves: U = 1101
	sendAt(1070, m2)
	sendAt(1080, m2) // the hold trigger: M2 for the session
	flagsEqual(t, r, map[string][]string{"SendMessage": {"*"}, "Waiting": {"M1", "M2"}})
	during := begin(1090, m1)
	at(1100) // the round reads U − 1 first
	round()
	flagsEqual(t, r, map[string][]string{"SendMessage": {"*"}, "Waiting": {"M1", "M2"}})
	at(1101) // U
	round()
	flagsEqual(t, r, map[string][]string{"SendMessage": {"*"}, "Waiting": {"M2"}})
	after := begin(1200, m1)
	end(1210, before)
	end(1220, during)
	end(1230, after)
	sendAt(1300, m1)
	sendAt(1301, m1)
	sendAt(1302, m1) // busy again
	again := begin(1303, m1)
	end(1304, again)
	at(5000) // long after: M1 off, M2 held
	round()
	flagsEqual(t, r, map[string][]string{"SendMessage": {"*"}, "Waiting": {"M2"}})
	now := r.Now()
	round()
	st.until(now)
	var got []int64
	for _, pk := range st.take(false) {
		if pk.Sensor == uint16(sWaiting) {
			if pk.Kind != wire.PWhole {
				t.Fatalf("Waiting packet of kind %d, want whole", pk.Kind)
			}
			got = append(got, pk.Begin)
		}
	}
	if want := []int64{900, 1090, 1303}; !slices.Equal(got, want) {
		t.Fatalf("waits sent (by their begins) %v, want %v", got, want)
	}
	s.Close()
	flagsEqual(t, r, map[string][]string{})
}

// TestCountWhileOwedAtClose: a wait begun while its mailbox was busy,
// still in progress when the count fell (owed its end) and still in
// progress when the resident closes, is reported at the close (whole, to
// forever) as the waits of a mailbox still busy are; one begun after the
// disable is not. (Live, the demo's last waits are never resumed: the run
// ends with them open, and the monitor, given nothing, lost the answer
// they make with the busy span — TestLiveTwoPhasePackets' count-3-mailboxes,
// 1 run in 10 to 30.)
func TestCountWhileOwedAtClose(t *testing.T) {
	r, c, _, st, p, m1, m2 := whileRig(t)
	send, wait := r.Sensor(sSendMessage), r.Sensor(sWaiting)
	at := func(ts int64) { c.set(ts - 1) }
	for _, ts := range []int64{1000, 1050, 1060} { // M1 busy until U = 1101
		at(ts)
		ev(send, Value{E: p}, Value{E: m1})
	}
	for _, ts := range []int64{1070, 1080, 1090} { // M2 busy until 1171
		at(ts)
		ev(send, Value{E: p}, Value{E: m2})
	}
	at(1095)
	wait.Begin([]Value{{E: p}, {E: m1}}) // owed at the disable
	at(1096)
	wait.Begin([]Value{{E: p}, {E: m2}}) // enabled at the close
	at(1101)
	r.round(false)
	flagsEqual(t, r, map[string][]string{"SendMessage": {"*"}, "Waiting": {"M2"}})
	at(1150)
	wait.Begin([]Value{{E: p}, {E: m1}}) // after the disable: not owed
	r.Close()
	if err := st.toEnd(); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	var got []string
	for _, pk := range st.take(false) {
		if pk.Sensor == uint16(sWaiting) {
			got = append(got, fmt.Sprintf("%s@%d", st.name(pk), pk.Begin))
		}
	}
	want := []string{fmt.Sprintf("%d P M1@1095", wire.PWhole), fmt.Sprintf("%d P M2@1096", wire.PWhole)}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("waits reported at the close %v, want %v", got, want)
	}
}

// TestCountWhileDrainLag: the stated lag, on the real clock. With the
// test running the rounds: a round before the count falls keeps the
// enable, and the first round after it takes it back. With the drain's
// own loop: the enable is taken back (the lag is logged).
func TestCountWhileDrainLag(t *testing.T) {
	const window = int64(200 * time.Millisecond)
	busy := func(r *Resident) (*trigger, int64) {
		send := r.Sensor(sSendMessage)
		p := r.Create(tProcess, "P", []Value{{N: 1}})
		m := r.Create(tMailbox, "M1", nil)
		s := r.Open()
		t.Cleanup(s.Close)
		mustApply(t, s, wire.Command{Kind: wire.CLease, Period: int64(time.Hour)})
		mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
		mustApply(t, s, whileCountCmd(1, 2, window))
		ev(send, Value{E: p}, Value{E: m})
		ev(send, Value{E: p}, Value{E: m})
		tr := s.triggers[1]
		tr.count.mu.Lock()
		u := tr.count.expiry(tr.count.keys["M1"])
		tr.count.mu.Unlock()
		return tr, u
	}
	enabled := func(r *Resident) bool { return len(r.Flags()["Waiting"]) == 1 }

	r := manualRounds(t)
	_, u := busy(r)
	if !enabled(r) {
		t.Fatal("Waiting not enabled by the count")
	}
	if r.Now() < u-1 {
		r.round(false)
		if r.Now() < u && !enabled(r) {
			t.Fatal("a round before the count fell took the enable back")
		}
	}
	for r.Now() < u {
		time.Sleep(time.Duration(u-r.Now()) + time.Millisecond)
	}
	r.round(false)
	if enabled(r) {
		t.Fatal("the first round after the count fell kept the enable")
	}

	r2 := New(testSpec(), Options{})
	t.Cleanup(r2.Close)
	_, u2 := busy(r2)
	deadline := time.Now().Add(10 * time.Second)
	for enabled(r2) {
		if time.Now().After(deadline) {
			t.Fatal("the drain did not take the enable back within 10 s of the count's fall")
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Logf("taken back %v after the count fell (drain period %v)", time.Duration(r2.Now()-u2), drainEvery)
	if r2.Now() < u2 {
		t.Fatalf("taken back %v before the count fell", time.Duration(u2-r2.Now()))
	}
}
