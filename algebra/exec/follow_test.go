package exec

import (
	"testing"

	"github.com/tqmon/tqmon/algebra"
)

func proc(id string, parent int64) []algebra.Value {
	return []algebra.Value{algebra.Entity(id), algebra.Str("x"), algebra.Int(parent)}
}

// TestFollowAncestors: a flag set for an ancestor counts, at any depth up
// to MaxDepth; cycles (reused pids) end the walk; beyond MaxParents no
// parent is kept, so a later process is not followed.
func TestFollowAncestors(t *testing.T) {
	f := &Follow{Rel: "Process", Type: "Process", Parent: 2, MaxParents: 3}
	count := map[string]int{"10": 1}
	f.note(proc("11", 10))
	f.note(proc("12", 11))
	f.note(proc("20", 1))
	if !f.ancestorEnabled("11", count) || !f.ancestorEnabled("12", count) {
		t.Error("a child or grandchild of an enabled process is not followed")
	}
	if f.ancestorEnabled("20", count) || f.ancestorEnabled("10", count) || f.ancestorEnabled("99", count) {
		t.Error("a process outside the tree is followed")
	}
	f.note(proc("13", 12)) // beyond MaxParents: not kept
	if f.ancestorEnabled("13", count) || len(f.parent) != 3 {
		t.Errorf("MaxParents 3 kept %d parents", len(f.parent))
	}
	// A cycle (a reused pid) and a chain deeper than MaxDepth end the walk.
	c := &Follow{Parent: 2}
	c.note(proc("1", 2))
	c.note(proc("2", 1))
	if c.ancestorEnabled("1", map[string]int{"3": 1}) {
		t.Error("a cycle")
	}
	d := &Follow{Parent: 2}
	for i := 101; i <= 100+MaxDepth+1; i++ {
		d.note(proc(itoa(i), int64(i-1)))
	}
	if d.ancestorEnabled(itoa(100+MaxDepth+1), map[string]int{"100": 1}) {
		t.Error("an ancestor beyond MaxDepth counted")
	}
	if !d.ancestorEnabled(itoa(100+MaxDepth), map[string]int{"100": 1}) {
		t.Error("an ancestor MaxDepth up did not count")
	}
}

func itoa(n int) string { return algebra.Int(int64(n)).String() }
