package kernel

import (
	"slices"
	"testing"

	"github.com/tqmon/tqmon/sensor/bpfgen"
)

// The drain's memo holds only while the entity table is as it was: an
// event whose bytes repeat the last one's is decoded again once the
// thread it names has ended and a new thread took its ID, and names the
// new thread (without the entity table's generation, it named the old
// one).
func TestMemoFollowsEntities(t *testing.T) {
	s, err := NewSynthetic(1 << 20)
	if err != nil {
		t.Skip(err)
	}
	defer s.Close()
	tr := s.t
	tr.stopDrain(false) // (the test is the drain)
	var out roundOut
	b := slices.Clone(s.rec)
	thread := -1
	for i, a := range s.R.cat.Lookup("Syscall").Attrs {
		if a.Name == "Thread" {
			thread = i
		}
	}
	send := func(ts int64) uint64 {
		le.PutUint64(b, uint64(ts))
		tr.packet(b, ts, &out)
		return tr.memo.vals[thread].N
	}
	s.R.mu.Lock()
	defer s.R.mu.Unlock()
	// Another process and thread, named by a record decoded between two
	// alike (as an interval's begin is decoded: the memo holds events
	// only).
	op := tr.ents.create(typeProcess, 777, 0, "other", nil, 0, nil)
	tr.ents.create(typeThread, 777, 0, "", op, 0, nil)
	other := slices.Clone(s.rec)
	ss := tr.r.sensors[int(le.Uint16(s.rec[bpfgen.OffSensor:]))]
	for _, sl := range ss.s.Bindings[0].Layout.Slots {
		if sl.Entity != "" {
			le.PutUint64(other[sl.Off:], 777)
		}
	}
	tr.memo.ok = false // (as a round starts)
	k1 := send(1)
	if k := send(2); k != k1 || tr.memoHits != 1 {
		t.Fatalf("a repeated event: thread key %d (first %d), %d memo hits; want the same key, 1 hit", k, k1, tr.memoHits)
	}
	thr := tr.ents.live[typeThread][SynthPid]
	le.PutUint64(other, 3)
	tr.decode(ss, ss.s.Bindings[0], other, 3, &out)
	if send(4); tr.memoHits != 2 || !slices.Contains(tr.memo.ents, thr) {
		t.Fatalf("a repeated event after another record was decoded: %d memo hits, entities %v; want 2 hits, naming thread %d", tr.memoHits, tr.memo.ents, thr.key)
	}
	old := tr.ents.live[typeThread][SynthPid]
	tr.ents.end(old, 5, nil)
	nt := tr.ents.create(typeThread, SynthPid, 6, "", old.proc, 0, nil)
	if k := send(7); k != nt.key {
		t.Errorf("after the thread's ID was reused, the event names key %d; the new thread is %d (the old %d)", k, nt.key, k1)
	}
}
