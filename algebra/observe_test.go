package algebra

import "testing"

// TestObservationBuiltIn: every catalog — new or cloned — finds Observed
// and Lost, which it does not list among its declared relations, and no
// relation may take their names.
func TestObservationBuiltIn(t *testing.T) {
	c := NewCatalog("x.sdl")
	for _, cat := range []*Catalog{c, c.Clone()} {
		for _, name := range []string{ObservedName, LostName} {
			r := cat.Lookup(name)
			if r == nil || !r.Builtin || r.Class != ClassInterval || len(r.Attrs) != 2 || r.Attrs[0].Name != "Relation" {
				t.Fatalf("%s: %+v", name, r)
			}
			if cat.AddRelation(&Relation{Name: name, Class: ClassEvent}) {
				t.Errorf("a relation named %s was added", name)
			}
		}
		if len(cat.Relations) != 0 || len(cat.Builtins()) != 2 {
			t.Errorf("relations %v, built-ins %v", cat.Relations, cat.Builtins())
		}
		h := NewHistory(cat)
		if h.Table(ObservedName) == nil || h.Table(LostName) == nil {
			t.Error("a history has no Observed or Lost table")
		}
	}
	if c.Clone().Lookup(LostName) != c.Lookup(LostName) {
		t.Error("a clone's Lost is another relation")
	}
}
