package play

import (
	"cmp"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// historySource yields a recorded history's tuples as elements in time
// order.
type historySource struct {
	items []item
	pos   int
}

type item struct {
	rel string
	e   stream.Elem
}

// HistorySource is an stream.Source of a recorded history's tuples (of the
// named relations; all when names is nil): Begin and End of each interval
// (tuples open at the end of the history have no End), Event of each
// event, in time order, Ends first at equal times.
func HistorySource(h *algebra.History, names []string) stream.Source {
	if names == nil {
		for _, r := range h.Catalog.Relations {
			names = append(names, r.Name)
		}
	}
	var items []item
	for _, name := range names {
		t := h.Table(name)
		if t == nil {
			continue
		}
		event := t.Rel.IsEvent()
		recs := make([]stream.Rec, len(t.Rows))
		for i := range t.Rows {
			row := &t.Rows[i]
			rec := &recs[i]
			*rec = stream.Rec{Vals: row.Vals, From: row.From}
			if event {
				items = append(items, item{name, stream.Elem{Kind: stream.Event, T: row.From, Rec: rec}})
				continue
			}
			items = append(items, item{name, stream.Elem{Kind: stream.Begin, T: row.From, Rec: rec}})
			if row.To != algebra.Forever {
				items = append(items, item{name, stream.Elem{Kind: stream.End, T: row.To, Rec: rec}})
			}
		}
	}
	slices.SortStableFunc(items, func(a, b item) int {
		if c := cmp.Compare(a.e.T, b.e.T); c != 0 {
			return c
		}
		return cmp.Compare(phase(a.e), phase(b.e))
	})
	return &historySource{items: items}
}

// phase orders elements at one time: Ends first.
func phase(e stream.Elem) int {
	if e.Kind == stream.End {
		return 0
	}
	return 1
}

func (s *historySource) Next() (string, stream.Elem, bool, error) {
	if s.pos >= len(s.items) {
		return "", stream.Elem{}, false, nil
	}
	it := s.items[s.pos]
	s.items[s.pos] = item{}
	s.pos++
	return it.rel, it.e, true, nil
}
