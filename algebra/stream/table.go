package stream

import (
	"slices"

	"github.com/tqmon/tqmon/algebra"
)

// TableSource is a Source over a history's tables (all relations, or
// those named): Begins and Events at their starts, Ends at their ends
// (none for tuples open at the end), in time order with Ends first.
func TableSource(h *algebra.History, rels ...string) Source {
	if len(rels) == 0 {
		for _, r := range h.Catalog.Relations {
			rels = append(rels, r.Name)
		}
	}
	s := &tableSource{}
	for _, name := range rels {
		t := h.Table(name)
		if t == nil {
			continue
		}
		for _, e := range TableElems(t) {
			s.items = append(s.items, tableItem{name, e})
		}
	}
	slices.SortStableFunc(s.items, func(a, b tableItem) int { return Compare(a.e, b.e) })
	return s
}

// TableElems is a table's tuples as elements, in time order with Ends
// first at equal times.
func TableElems(t *algebra.Table) []Elem {
	out := make([]Elem, 0, 2*len(t.Rows))
	recs := make([]Rec, len(t.Rows))
	for i, row := range t.Rows {
		rec := &recs[i]
		*rec = Rec{Vals: row.Vals, From: row.From}
		if t.Rel.IsEvent() {
			out = append(out, Elem{Kind: Event, T: row.From, Rec: rec})
			continue
		}
		out = append(out, Elem{Kind: Begin, T: row.From, Rec: rec})
		if row.To != algebra.Forever {
			out = append(out, Elem{Kind: End, T: row.To, Rec: rec})
		}
	}
	slices.SortStableFunc(out, Compare)
	return out
}

type tableItem struct {
	rel string
	e   Elem
}

type tableSource struct {
	items []tableItem
	i     int
}

func (s *tableSource) Next() (string, Elem, bool, error) {
	if s.i == len(s.items) {
		return "", Elem{}, false, nil
	}
	it := s.items[s.i]
	s.i++
	return it.rel, it.e, true, nil
}
