package resident

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/wire"
)

// MooBench-style sensor overhead: the same subject work, uninstrumented,
// with a disabled sensor, with the sensor armed for another entity, and
// enabled (packets written and drained concurrently). Run them in one go:
//
//	go test -run '^$' -bench 'BenchmarkSensor|BenchmarkSubject|BenchmarkDrain' -benchmem -count 5 ./resident/

// work is the subject's work: an inlinable function.
func work(x uint64) uint64 { return x*6364136223846793005 + 1442695040888963407 }

var benchSink uint64

// benchSend is a sensor as generated code holds it: a package variable.
var benchSend *Sensor

// sendMessageCall is a generated-style sensor function written in one
// piece: it costs more than the inliner's budget, so every call is a
// call, enabled or not.
func sendMessageCall(p, m *Entity) {
	if benchSend.Armed() {
		v := [2]Value{{E: p}, {E: m}}
		benchSend.Event(v[:])
	}
}

// sendMessage is the same function split as generated code should be:
// the gate inlines into the caller, the slow path stays out of line.
func sendMessage(p, m *Entity) {
	if benchSend.Armed() {
		sendMessageSlow(p, m)
	}
}

//go:noinline
func sendMessageSlow(p, m *Entity) {
	v := [2]Value{{E: p}, {E: m}}
	benchSend.Event(v[:])
}

func benchResident(b *testing.B) (*Resident, *Entity, *Entity) {
	r := New(testSpec(), Options{})
	b.Cleanup(r.Close)
	benchSend = r.Sensor(sSendMessage)
	return r, r.Create(tProcess, "P1", nil), r.Create(tMailbox, "M", nil)
}

func BenchmarkSensorUninstrumented(b *testing.B) {
	x := uint64(1)
	for i := 0; i < b.N; i++ {
		x = work(x)
	}
	benchSink = x
}

// The sensor as generated code writes it, in the subject's code.
func BenchmarkSensorDisabled(b *testing.B) {
	_, p, m := benchResident(b)
	x := uint64(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x = work(x)
		if benchSend.Armed() {
			v := [2]Value{{E: p}, {E: m}}
			benchSend.Event(v[:])
		}
	}
	benchSink = x
}

// The sensor behind a generated function split for inlining.
func BenchmarkSensorDisabledWrapper(b *testing.B) {
	_, p, m := benchResident(b)
	x := uint64(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x = work(x)
		sendMessage(p, m)
	}
	benchSink = x
}

// The sensor behind a generated function that does not inline.
func BenchmarkSensorDisabledCall(b *testing.B) {
	_, p, m := benchResident(b)
	x := uint64(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x = work(x)
		sendMessageCall(p, m)
	}
	benchSink = x
}

func BenchmarkSensorOtherEntityEnabled(b *testing.B) {
	r, p, m := benchResident(b)
	r.Create(tProcess, "P2", nil)
	s := r.Open()
	if err := s.Apply(&wire.Command{Kind: wire.CEnable, Sensor: uint16(sSendMessage), Type: uint16(tProcess), Entity: "P2"}); err != nil {
		b.Fatal(err)
	}
	x := uint64(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x = work(x)
		if benchSend.Armed() {
			v := [2]Value{{E: p}, {E: m}}
			benchSend.Event(v[:])
		}
	}
	benchSink = x
}

// received is what enabledSession's remote got: the SendMessage packets,
// and why the session ended, if it ended before the benchmark did.
type received struct {
	n     atomic.Uint64
	ended atomic.Value // string
}

// enabledSession opens a session with the benchmark sensor enabled for P1
// and a remote receiving in a loop; it returns the count of SendMessage
// packets received and a stop function returning the final count. The
// session's lease covers the whole benchmark (a run takes longer than the
// default lease); if the session ends anyway, n stops counting and the
// benchmark fails rather than wait for packets that cannot come.
func enabledSession(b *testing.B, r *Resident) (*received, func() uint64) {
	s := r.Open()
	for _, c := range []wire.Command{
		{Kind: wire.CLease, Period: int64(time.Hour)},
		{Kind: wire.CEnable, Sensor: uint16(sSendMessage), Type: uint16(tProcess), Entity: "P1"},
	} {
		if err := s.Apply(&c); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := &received{}
	n := &got.n
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			bt, err := s.Recv(ctx)
			if err != nil {
				if ctx.Err() == nil {
					got.ended.Store(err.Error())
				}
				return
			}
			for _, pk := range bt.Packets {
				if pk.Sensor == uint16(sSendMessage) {
					n.Add(1)
				}
			}
			s.Release(bt) // as the transport does once it has encoded a batch
		}
	}()
	return got, func() uint64 {
		r.Close()
		cancel()
		<-done
		return n.Load()
	}
}

// Enabled: every call writes a packet, drained concurrently by the
// resident's drain and received by a remote. The calls come in bursts
// that fit in the ring (the timer stops between bursts until the remote
// has everything), so no packet is dropped: this is the cost of a packet
// written while the drain works on the other core.
func BenchmarkSensorEnabled(b *testing.B) {
	r, p, m := benchResident(b)
	recv, stop := enabledSession(b, r)
	burst := r.slots / 2
	x := uint64(1)
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(burst, b.N-done)
		for range n {
			x = work(x)
			if benchSend.Armed() {
				v := [2]Value{{E: p}, {E: m}}
				benchSend.Event(v[:])
			}
		}
		done += n
		b.StopTimer()
		for recv.n.Load() < uint64(done) && benchSend.drops.Load() == 0 {
			if e := recv.ended.Load(); e != nil {
				b.Fatalf("session ended with %d of %d packets received: %v", recv.n.Load(), done, e)
			}
			time.Sleep(100 * time.Microsecond)
		}
		b.StartTimer()
	}
	b.StopTimer()
	benchSink = x
	drops := benchSend.drops.Load()
	delivered := stop()
	b.ReportMetric(float64(drops)/float64(b.N), "drops/op")
	if delivered+drops != uint64(b.N) {
		b.Fatalf("delivered %d + dropped %d != %d", delivered, drops, b.N)
	}
}

// Enabled, saturated: calls back to back, as fast as the producer goes.
// No drain keeps up with that (BenchmarkDrain: a drained packet costs
// more than a written one), so most calls find the ring full and count a
// drop: drops/op says how many. ns/op is a mix of both paths.
func BenchmarkSensorEnabledSaturated(b *testing.B) {
	r, p, m := benchResident(b)
	_, stop := enabledSession(b, r)
	x := uint64(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x = work(x)
		if benchSend.Armed() {
			v := [2]Value{{E: p}, {E: m}}
			benchSend.Event(v[:])
		}
	}
	b.StopTimer()
	benchSink = x
	drops := benchSend.drops.Load()
	delivered := stop()
	b.ReportMetric(float64(drops)/float64(b.N), "drops/op")
	if delivered+drops != uint64(b.N) {
		b.Fatalf("delivered %d + dropped %d != %d", delivered, drops, b.N)
	}
}

// MooBench proper: a subject operation doing some work (≈ 250 dependent
// multiply-adds), uninstrumented and with the sensor enabled; the drain
// keeps up at this rate. The overhead is the difference.
const subjectWork = 250

func subjectOp(x uint64) uint64 {
	for range subjectWork {
		x = work(x)
	}
	return x
}

func BenchmarkSubjectUninstrumented(b *testing.B) {
	x := uint64(1)
	for i := 0; i < b.N; i++ {
		x = subjectOp(x)
	}
	benchSink = x
}

func BenchmarkSubjectEnabled(b *testing.B) {
	r, p, m := benchResident(b)
	_, stop := enabledSession(b, r)
	x := uint64(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x = subjectOp(x)
		if benchSend.Armed() {
			v := [2]Value{{E: p}, {E: m}}
			benchSend.Event(v[:])
		}
	}
	b.StopTimer()
	benchSink = x
	drops := benchSend.drops.Load()
	stop()
	b.ReportMetric(float64(drops)/float64(b.N), "drops/op")
}

// manualResident returns a resident whose drain rounds the caller runs,
// with a session that has SendMessage enabled for P1.
func manualResident(b *testing.B) (*Resident, *Session, *Entity, *Entity) {
	r := manualRounds(b)
	benchSend = r.Sensor(sSendMessage)
	p, m := r.Create(tProcess, "P1", nil), r.Create(tMailbox, "M", nil)
	s := r.Open()
	if err := s.Apply(&wire.Command{Kind: wire.CEnable, Sensor: uint16(sSendMessage), Type: uint16(tProcess), Entity: "P1"}); err != nil {
		b.Fatal(err)
	}
	return r, s, p, m
}

// Enabled, the producer alone: the cost of writing a packet (clock, claim,
// slot, publication) with no drain running concurrently; the ring is
// emptied between bursts, untimed.
func BenchmarkSensorEnabledWrite(b *testing.B) { benchWrite(b, nil) }

// With a fragment on the sensor (fragment.go), the producer alone as in
// BenchmarkSensorEnabledWrite: a cheap predicate that rejects every packet
// (evaluated, nothing written), one that passes every packet (evaluated,
// then written), and a dear one (more than maxEarlyCmps comparisons: left
// to the drain, so the producer writes as if unfiltered). Compare with
// BenchmarkSensorEnabledWrite in the same run:
//
//	go test -run '^$' -bench 'SensorEnabledWrite$|SensorFiltered|SensorUninstrumented' -count 5 ./resident
func BenchmarkSensorFilteredRejected(b *testing.B) {
	p := entIs(1, "M9")
	benchWrite(b, &p)
}

func BenchmarkSensorFilteredPassed(b *testing.B) {
	p := entIs(1, "M")
	benchWrite(b, &p)
}

func BenchmarkSensorFilteredLate(b *testing.B) { benchWrite(b, dear(1, "M")) }

func benchWrite(b *testing.B, pred *wire.Pred) {
	r, s, p, m := manualResident(b)
	if pred != nil {
		if err := s.Apply(&wire.Command{Kind: wire.CFragment, ID: 1, Sensor: uint16(sSendMessage), Pred: pred}); err != nil {
			b.Fatal(err)
		}
	}
	x := uint64(1)
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(r.slots/2, b.N-done)
		for range n {
			x = work(x)
			if benchSend.Armed() {
				v := [2]Value{{E: p}, {E: m}}
				benchSend.Event(v[:])
			}
		}
		b.StopTimer()
		for _, q := range r.ringList() {
			if q != nil {
				q.head.Store(q.claimed())
			}
		}
		b.StartTimer()
		done += n
	}
	benchSink = x
}

// The drain's cost per packet: packets written to the ring (untimed),
// then drained to one session and received.
func BenchmarkDrain(b *testing.B) {
	r, s, p, m := manualResident(b)
	send := r.Sensor(sSendMessage)
	v := []Value{{E: p}, {E: m}}
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(b.N-done, r.slots/2)
		b.StopTimer()
		for range n {
			send.Event(v)
		}
		b.StartTimer()
		r.round(false)
		for got := 0; got < n; {
			bt, err := s.Recv(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			k := len(bt.Packets)
			got += k
			s.Release(bt)
			if k == 0 {
				r.round(false)
			}
		}
		done += n
	}
}

// A monitor that never reads: the subject's throughput (BenchmarkSubject's
// operation, the sensor firing) with such a monitor attached, as a ratio
// to its throughput with no monitor at all (the acceptance: ≥
// 0.9). Two residents, the hostile one (a session with SendMessage
// enabled for every process, its lease renewed, that never reads) and
// an unmonitored twin, run the same operations in pairs of slices of
// hostileBenchSlice operations, the order alternating, so that both see
// the same machine; the ratio reported is the median over pairs of the
// twin's slice time over the hostile one's. The silent session's packets
// are dropped once it holds session.MaxHeld, and from then on shed
// (shed.go): the subject pays for the gate, the enable check and the
// count, not for writing packets nobody takes. b.N operations on each.
//
//	make bench-safety
func BenchmarkHostileMonitorNeverReads(b *testing.B) {
	hostile, twin := New(testSpec(), Options{}), New(testSpec(), Options{})
	b.Cleanup(hostile.Close)
	b.Cleanup(twin.Close)
	bad := hostile.Open()
	for _, c := range []wire.Command{
		{Kind: wire.CLease, Period: int64(time.Hour)},
		{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)},
	} {
		if err := bad.Apply(&c); err != nil {
			b.Fatal(err)
		}
	}
	type side struct {
		send *Sensor
		p, m *Entity
		took time.Duration
	}
	mk := func(r *Resident) *side {
		return &side{send: r.Sensor(sSendMessage), p: r.Create(tProcess, "P1", nil), m: r.Create(tMailbox, "M", nil)}
	}
	h, w := mk(hostile), mk(twin)
	x := uint64(1)
	run := func(sd *side, n int) time.Duration {
		start := time.Now()
		for range n {
			x = subjectOp(x)
			if sd.send.Armed() {
				v := [2]Value{{E: sd.p}, {E: sd.m}}
				sd.send.Event(v[:])
			}
		}
		d := time.Since(start)
		sd.took += d
		return d
	}
	var ratios []float64
	b.ResetTimer()
	for done, i := 0, 0; done < b.N; i++ {
		n := min(hostileBenchSlice, b.N-done)
		var th, tw time.Duration
		if i%2 == 0 {
			th, tw = run(h, n), run(w, n)
		} else {
			tw, th = run(w, n), run(h, n)
		}
		ratios = append(ratios, float64(tw)/float64(th))
		done += n
	}
	b.StopTimer()
	benchSink = x
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "ratio")
	b.ReportMetric(float64(h.took.Nanoseconds())/float64(b.N), "ns/op-hostile")
	b.ReportMetric(float64(w.took.Nanoseconds())/float64(b.N), "ns/op-twin")
}

// hostileBenchSlice is a slice of BenchmarkHostileMonitorNeverReads, in
// operations: a few milliseconds.
const hostileBenchSlice = 20000
