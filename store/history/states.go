package history

import (
	"cmp"
	"math"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/source"
)

// states checks that an entity relation gives each entity one state at a
// time: no two of its rows for one entity (its first attribute) overlap.
// It takes rows in order of their starts, ties in file order — a sorted
// file as it is read (Dir.Source), or a whole file once sorted (readInto)
// — and keeps, per entity, the row that ends last so far: a row overlaps
// an earlier-starting one exactly when it starts before that row's end,
// so checking against the latest end finds every row that overlaps
// another (each is reported once, with that row as its partner). What is
// held is one row per entity.
type states struct {
	file   string
	latest map[string]stateRow
}

// stateRow is a row as states keeps it: its span, its place (the from
// column) and its index in file order.
type stateRow struct {
	from, to algebra.Time
	pos      source.Pos
	idx      int
}

// newStates is the check of rel's rows read from file; nil when rel is not
// an entity relation (nothing to check).
func newStates(file string, rel *algebra.Relation) *states {
	if rel.Class != algebra.ClassEntity || len(rel.Attrs) == 0 || rel.Attrs[0].Type.Kind != algebra.KindEntity {
		return nil
	}
	return &states{file: file, latest: map[string]stateRow{}}
}

// check takes the next row, of entity id, and adds a diagnostic to errs
// when it overlaps an earlier-starting row of that entity: at whichever
// of the two comes later in the file, naming the other's place. It
// reports whether the row is good (false: it overlaps and comes later).
func (s *states) check(id string, row stateRow, errs *source.ErrorList) bool {
	w, seen := s.latest[id]
	if !seen || row.to > w.to {
		s.latest[id] = row
	}
	if !seen || row.from >= w.to {
		return true
	}
	later, other := row, w
	if w.idx > row.idx {
		later, other = w, row
	}
	errs.Add(s.file, later.pos, "%s is in two states at once: this row (%s) overlaps the row at %s:%d:%d (%s)",
		id, span(later), s.file, other.pos.Line, other.pos.Col, span(other))
	return later.idx != row.idx
}

// span prints a row's span in clock notation.
func span(r stateRow) string {
	return algebra.FormatTime(r.from, algebra.TimeAuto) + " to " + algebra.FormatTime(r.to, algebra.TimeAuto)
}

// place is a row's place, compact: what readInto keeps per row of an
// entity relation until checkAll.
type place struct{ line, col int32 }

func placeOf(p source.Pos) place {
	return place{int32(min(p.Line, math.MaxInt32)), int32(min(p.Col, math.MaxInt32))}
}

// checkAll checks the rows of an entity relation's table read whole, in
// any order: sorted by start (ties in file order) through check; at[i] is
// row i's place. It holds 4 bytes per row besides at.
func (s *states) checkAll(rows []algebra.Tuple, at []place, errs *source.ErrorList) {
	order := make([]int32, len(rows))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(rows[a].From, rows[b].From) })
	for _, i := range order {
		r := &rows[i]
		pos := source.Pos{Line: int(at[i].line), Col: int(at[i].col)}
		s.check(r.Vals[0].S, stateRow{from: r.From, to: r.To, pos: pos, idx: int(i)}, errs)
	}
}
