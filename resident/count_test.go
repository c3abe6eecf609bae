package resident

import (
	"fmt"
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
