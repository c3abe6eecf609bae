package exec

import (
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// TestFreeListsBounded: the emptied index lists and deps lists kept for
// reuse stay within their bounds (maxFreeLists lists, none longer than
// maxFreeList) however many keys come and go, and a kept list is reused.
func TestFreeListsBounded(t *testing.T) {
	ix := &index{cols: []int{0}}
	var ents []*entry
	for k := 0; k < 3*maxFreeLists; k++ {
		e := &entry{rec: &stream.Rec{Vals: []algebra.Value{algebra.Int(int64(k))}}}
		ents = append(ents, e)
		ix.add(uint64(k), e)
	}
	// One long list: never kept.
	long := uint64(1 << 40)
	for range 2 * maxFreeList {
		e := &entry{}
		ents = append(ents, e)
		ix.add(long, e)
	}
	for _, e := range ents {
		h := long
		if e.rec != nil {
			h = uint64(e.rec.Vals[0].N)
		}
		ix.remove(h, e)
	}
	if ix.m.len() != 0 {
		t.Fatalf("%d keys left", ix.m.len())
	}
	if len(ix.free) > maxFreeLists {
		t.Errorf("%d free lists kept, bound %d", len(ix.free), maxFreeLists)
	}
	for _, l := range ix.free {
		if cap(l) > maxFreeList || len(l) != 0 {
			t.Fatalf("a kept list has len %d cap %d (bound %d)", len(l), cap(l), maxFreeList)
		}
	}
	n := len(ix.free)
	ix.add(7, ents[0])
	if len(ix.free) != n-1 {
		t.Errorf("a new key did not reuse a kept list")
	}

	j := &Join{}
	for range 2 * maxFreeLists {
		j.recycleDeps(make([]*cand, 1, 4))
	}
	j.recycleDeps(make([]*cand, 0, 2*maxFreeList))
	if len(j.depPool) > maxFreeLists {
		t.Errorf("%d deps lists kept, bound %d", len(j.depPool), maxFreeLists)
	}
	for _, l := range j.depPool {
		if cap(l) > maxFreeList || len(l) != 0 || cap(l) > 0 && l[:1][0] != nil {
			t.Fatalf("a kept deps list has len %d cap %d, or a candidate still in it", len(l), cap(l))
		}
	}
}
