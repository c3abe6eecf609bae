package resident

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/wire"
)

// The paper's example, plus a trigger target and a traced interval.
const (
	tProcessor TypeID = iota
	tProcess
	tMailbox
)

const (
	sProcessor SensorID = iota
	sProcess
	sMailbox
	sSendMessage // event (Process initiator, Mailbox target), traced on initiator
	sRunningOn   // interval (Process target, Processor performer), sampled on performer
	sWaiting     // interval (Process initiator, Mailbox target), D on target
	sReceive     // event (Process, Mailbox target), traced on target
	sHolding     // interval (Process initiator, Mailbox, Note string), traced on initiator
	sWide        // event with 8 attributes, traced on initiator (attribute 1)
	sWideSpan    // interval with 8 attributes, traced on initiator (attribute 1)
)

// wideAttrs are the attributes of Wide and WideSpan.
func wideAttrs() []AttrSpec {
	return []AttrSpec{
		{Name: "N", Kind: wire.VInt}, {Name: "P", Kind: wire.VEntity, Type: tProcess}, {Name: "S", Kind: wire.VString},
		{Name: "F", Kind: wire.VFloat}, {Name: "M", Kind: wire.VEntity, Type: tMailbox}, {Name: "B", Kind: wire.VBool},
		{Name: "T", Kind: wire.VString}, {Name: "D", Kind: wire.VDuration},
	}
}

func testSpec() *Spec {
	ent := func(name string, t TypeID) AttrSpec { return AttrSpec{Name: name, Kind: wire.VEntity, Type: t} }
	return &Spec{
		SDL:   "-- test spec",
		Types: []string{"Processor", "Process", "Mailbox"},
		Sensors: []SensorSpec{
			{Name: "Processor", Class: ClassEntity, Attrs: []AttrSpec{ent("Processor", tProcessor)}, Flag: -1},
			{Name: "Process", Class: ClassEntity, Attrs: []AttrSpec{ent("Process", tProcess),
				{Name: "State", Kind: wire.VEnum, Enum: []string{"Ready", "Running", "Waiting", "Done"}}}, Flag: -1},
			{Name: "Mailbox", Class: ClassEntity, Attrs: []AttrSpec{ent("Mailbox", tMailbox)}, Flag: -1},
			{Name: "SendMessage", Class: ClassEvent, Strategy: Traced, Attrs: []AttrSpec{ent("Process", tProcess), ent("Mailbox", tMailbox)}, Flag: 0},
			{Name: "RunningOn", Class: ClassInterval, Strategy: Sampled, Attrs: []AttrSpec{ent("Process", tProcess), ent("Processor", tProcessor)}, Flag: 1},
			{Name: "Waiting", Class: ClassInterval, Strategy: TracedThenDisabled, Attrs: []AttrSpec{ent("Process", tProcess), ent("Mailbox", tMailbox)}, Flag: 1},
			{Name: "Receive", Class: ClassEvent, Strategy: Traced, Attrs: []AttrSpec{ent("Process", tProcess), ent("Mailbox", tMailbox)}, Flag: 1},
			{Name: "Holding", Class: ClassInterval, Strategy: Traced, Attrs: []AttrSpec{ent("Process", tProcess), ent("Mailbox", tMailbox),
				{Name: "Note", Kind: wire.VString}}, Flag: 0},
			{Name: "Wide", Class: ClassEvent, Strategy: Traced, Attrs: wideAttrs(), Flag: 1},
			{Name: "WideSpan", Class: ClassInterval, Strategy: Traced, Attrs: wideAttrs(), Flag: 1},
		},
		EntityRel: []int{0, 1, 2},
		Period:    1e9,
	}
}

// manualRounds returns a resident on the real clock whose drain rounds
// the caller runs (r.round), closed when the test ends.
func manualRounds(tb testing.TB) *Resident {
	r := newResident(testSpec(), Options{})
	close(r.drainDone)
	tb.Cleanup(r.Close)
	return r
}

// fakeClock is a test clock: each read advances it by 1 ns; set jumps.
type fakeClock struct{ t atomic.Int64 }

func (c *fakeClock) now() int64      { return c.t.Add(1) }
func (c *fakeClock) set(t int64)     { c.t.Store(t) }
func (c *fakeClock) advance(d int64) { c.t.Add(d) }

func newFake(t *testing.T, opts Options) (*Resident, *fakeClock) {
	t.Helper()
	c := &fakeClock{}
	opts.Clock = c.now
	if opts.Wall == nil {
		opts.Wall = func() int64 { return 0 }
	}
	if opts.Slots == 0 {
		opts.Slots = 1024
	}
	r := New(testSpec(), opts)
	t.Cleanup(r.Close)
	return r, c
}

func mustApply(t *testing.T, s *Session, cmd wire.Command) {
	t.Helper()
	if err := s.Apply(&cmd); err != nil {
		t.Fatal(err)
	}
}

func enable(sensor SensorID, typ TypeID, id string) wire.Command {
	return wire.Command{Kind: wire.CEnable, Sensor: uint16(sensor), Type: uint16(typ), Entity: id}
}

func disable(sensor SensorID, typ TypeID, id string) wire.Command {
	return wire.Command{Kind: wire.CDisable, Sensor: uint16(sensor), Type: uint16(typ), Entity: id}
}

// stream checks a session's batches as they come and collects them.
type stream struct {
	t       *testing.T
	s       *Session
	lastW   int64
	started bool
	pkts    []wire.Packet
	defs    map[uint64]wire.EntityDef
	counts  map[uint16]wire.Count
	batches int
}

func newStream(t *testing.T, s *Session) *stream {
	return &stream{t: t, s: s, defs: map[uint64]wire.EntityDef{}, counts: map[uint16]wire.Count{}}
}

// check verifies a batch's invariants and records it.
func (st *stream) add(b *wire.Batch) error {
	for _, d := range b.Defs {
		st.defs[d.Key] = d
	}
	for i, p := range b.Packets {
		if st.started && p.TS <= st.lastW {
			return fmt.Errorf("batch %d packet %d: TS %d ≤ previous watermark %d", st.batches, i, p.TS, st.lastW)
		}
		if i > 0 && p.TS < b.Packets[i-1].TS {
			return fmt.Errorf("batch %d packet %d: TS %d before %d", st.batches, i, p.TS, b.Packets[i-1].TS)
		}
		for _, v := range p.Vals {
			if v.Kind == wire.VEntity && v.N != 0 {
				if _, ok := st.defs[v.N]; !ok {
					return fmt.Errorf("batch %d packet %d: entity key %d without definition", st.batches, i, v.N)
				}
			}
		}
	}
	if st.started && b.Watermark < st.lastW {
		return fmt.Errorf("batch %d: watermark %d went back from %d", st.batches, b.Watermark, st.lastW)
	}
	st.started = true
	st.lastW = b.Watermark
	st.pkts = append(st.pkts, b.Packets...)
	for _, c := range b.Counts {
		st.counts[c.Sensor] = c
	}
	st.batches++
	return nil
}

// until receives batches until the watermark reaches w.
func (st *stream) until(w int64) {
	st.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !st.started || st.lastW < w {
		b, err := st.s.Recv(ctx)
		if err != nil {
			st.t.Fatalf("waiting for watermark %d (at %d): %v", w, st.lastW, err)
		}
		if err := st.add(b); err != nil {
			st.t.Fatal(err)
		}
	}
}

// toEnd receives batches until the session ends and returns its error.
func (st *stream) toEnd() error {
	st.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		b, err := st.s.Recv(ctx)
		if err != nil {
			return err
		}
		if err := st.add(b); err != nil {
			st.t.Fatal(err)
		}
	}
}

// delivered counts the collected packets of sensor sid.
func (st *stream) delivered(sid SensorID) uint64 {
	n := uint64(0)
	for _, p := range st.pkts {
		if p.Sensor == uint16(sid) {
			n++
		}
	}
	return n
}

// take returns and forgets the packets collected so far, entity packets
// left out unless all.
func (st *stream) take(all bool) []wire.Packet {
	var out []wire.Packet
	for _, p := range st.pkts {
		if all || (p.Kind != wire.PEntityBegin && p.Kind != wire.PEntityEnd) {
			out = append(out, p)
		}
	}
	st.pkts = nil
	return out
}

// name renders a packet's values with entity IDs.
func (st *stream) name(p wire.Packet) string {
	s := fmt.Sprintf("%d", p.Kind)
	for _, v := range p.Vals {
		switch v.Kind {
		case wire.VEntity:
			s += " " + st.defs[v.N].ID
		case wire.VString:
			s += " " + v.S
		default:
			s += fmt.Sprintf(" %d", v.N)
		}
	}
	return s
}

// sync flushes: advance the fake clock and wait for the watermark past now.
func (st *stream) sync(r *Resident, c *fakeClock) {
	st.t.Helper()
	now := r.Now()
	c.advance(1000)
	st.until(now)
}

func ev(s *Sensor, vals ...Value) {
	if s.Armed() {
		s.Event(vals)
	}
}

func flagsEqual(t *testing.T, r *Resident, want map[string][]string) {
	t.Helper()
	got := r.Flags()
	if len(got) != len(want) {
		t.Fatalf("flags %v, want %v", got, want)
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Fatalf("flags %v, want %v", got, want)
		}
	}
}

func isCmdErr(err error, field string) bool {
	var ce *CommandError
	return errors.As(err, &ce) && ce.Field == field
}

// truthLog records a truth sink's reports.
type truthLog struct {
	mu     sync.Mutex
	events []truthRec
	begins map[uint64]truthRec
	ends   map[uint64]int64
}

type truthRec struct {
	s    SensorID
	vals []Value
	at   int64
}

func newTruth() *truthLog { return &truthLog{begins: map[uint64]truthRec{}, ends: map[uint64]int64{}} }

func (l *truthLog) Event(s SensorID, vals []Value, at int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, truthRec{s, vals, at})
}

func (l *truthLog) Begin(s SensorID, tuple uint64, vals []Value, at int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.begins[tuple] = truthRec{s, vals, at}
}

func (l *truthLog) End(s SensorID, tuple uint64, at int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ends[tuple] = at
}
