package exec

import "github.com/tqmon/tqmon/algebra"

// Follow is the monitor's side of following descendants (tqmon query
// --kernel --follow): the kernel resident then makes the packets of
// every process forked by an enabled one (transitively), and the αs
// whose flag holder has the followed entity type must accept them — a
// flag holder's flag counts as set when it is set for the holder or for
// one of its ancestors. Ancestors come from the entity relation's parent
// attribute (the kernel's Process.Parent), noted as its tuples begin;
// the resident's entity tuples of a fork precede the child's packets, so
// an α deciding a child's packet knows its parent.
//
// The kernel is the exact filter (it follows only processes forked while
// their parent was followed); the α's test may be wider (any enabled
// ancestor), never narrower, so it never drops what the kernel made.
//
// Bounds: at most MaxParents processes' parents are kept (later ones
// are not, and their packets are accepted only if their own flag is
// set); an ancestor walk stops after MaxDepth steps or at a cycle (a
// reused pid).
type Follow struct {
	// Rel is the entity relation whose tuples name parents (Process),
	// Type its entity type, Parent the index of the parent attribute (an
	// int: the parent's ID).
	Rel, Type string
	Parent    int
	// MaxParents bounds the parents kept (0: DefaultMaxParents).
	MaxParents int

	parent map[string]string
}

// DefaultMaxParents and MaxDepth are Follow's bounds.
const (
	DefaultMaxParents = 1 << 20
	MaxDepth          = 64
)

// note records the parent of an entity tuple beginning.
func (f *Follow) note(vals []algebra.Value) {
	if f.Parent >= len(vals) || len(vals) == 0 {
		return
	}
	if f.parent == nil {
		f.parent = map[string]string{}
	}
	limit := f.MaxParents
	if limit <= 0 {
		limit = DefaultMaxParents
	}
	id := vals[0].S
	if _, ok := f.parent[id]; !ok && len(f.parent) >= limit {
		return
	}
	p := vals[f.Parent]
	if p.N <= 0 {
		return
	}
	f.parent[id] = p.String()
}

// ancestorEnabled reports whether an ancestor of id has its flag set in
// count.
func (f *Follow) ancestorEnabled(id string, count map[string]int) bool {
	for i := 0; i < MaxDepth; i++ {
		p, ok := f.parent[id]
		if !ok || p == id {
			return false
		}
		if count[p] > 0 {
			return true
		}
		id = p
	}
	return false
}

// SetFollow makes the live run follow descendants as f says: the αs
// whose flag holder is of f.Type accept the packets of descendants of
// the entities they enable.
func (l *Live) SetFollow(f *Follow) {
	l.follow = f
	for _, as := range l.bySens {
		for _, a := range as {
			if a.Rel.Attrs[a.Flag].Type.Entity == f.Type {
				a.follow = f
			}
		}
	}
}
