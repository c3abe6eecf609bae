package algebra

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// Columns is a table's tuples dictionary-encoded in columns: what the
// interpreter's columnar path (algebra/exec, columnar.go) reads instead of
// the rows.
//
// Per attribute, Codes holds one int64 per tuple: an entity identifier's or
// a string's index in its Dict, an enum member's ordinal, an int's, time's
// or duration's value, a bool's 0 or 1, a float's IEEE-754 bits. From and
// To are the valid times, To clamped to Forever (the interpreter ends no
// tuple past it). Tuples are in order of From (stably: a table already in
// time order keeps its order), the order a history is played in.
//
// Codes compare as their values do only for equality, and for enums, ints,
// bools, times and durations also in order: dictionary codes number
// identifiers in the order they were first met, not in their natural order.
type Columns struct {
	Len   int
	Codes [][]int64
	// Min and Max bound each attribute's codes (Min > Max when there are
	// none). A float attribute's bounds are of its bits: meaningless.
	Min, Max []int64
	// Dicts decode each entity or string attribute's codes; nil for the
	// other kinds.
	Dicts    []*Dict
	From, To []Time
}

// Dict numbers the identifiers of one entity type (or a history's
// strings) densely, in the order they were first met. It only grows: a
// code once given keeps its meaning, so columns built at different times
// against one Dict compare. Its methods are safe for concurrent use.
type Dict struct {
	mu      sync.Mutex
	names   []string
	codes   map[string]int64
	natural bool    // entity identifiers: ordered by NaturalCompare
	ranks   []int32 // Ranks', for the first len(ranks) codes
	byRank  []int32
}

func newDict(natural bool) *Dict { return &Dict{codes: map[string]int64{}, natural: natural} }

// Ranks returns, per code, the rank of its identifier among the
// dictionary's in the order Compare puts their values in (natural order
// for entities, lexicographic for strings): codes ordered by rank are
// ordered as their values; and byRank, the code of each rank. Like Names,
// a snapshot; they are computed once per size of the dictionary.
func (d *Dict) Ranks() (ranks, byRank []int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.ranks) != len(d.names) {
		order := make([]int32, len(d.names))
		for i := range order {
			order[i] = int32(i)
		}
		cmpNames := strings.Compare
		if d.natural {
			cmpNames = NaturalCompare
		}
		slices.SortFunc(order, func(a, b int32) int { return cmpNames(d.names[a], d.names[b]) })
		d.ranks = make([]int32, len(order))
		for r, c := range order {
			d.ranks[c] = int32(r)
		}
		d.byRank = order
	}
	return d.ranks, d.byRank
}

// encode returns s's code, numbering it if it is new; the caller holds mu.
func (d *Dict) encode(s string) int64 {
	c, ok := d.codes[s]
	if !ok {
		c = int64(len(d.names))
		d.codes[s] = c
		d.names = append(d.names, s)
	}
	return c
}

// Code returns s's code, or false when s has none.
func (d *Dict) Code(s string) (int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.codes[s]
	return c, ok
}

// Names returns the identifiers by code. The slice is a snapshot, valid for
// every code given so far: later codes extend the dictionary beyond it and
// never change what it holds.
func (d *Dict) Names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.names[:len(d.names):len(d.names)]
}

// Where the columns live: with the History, not in each Table nor in a
// loader. The dictionaries must be the history's, one per entity type
// across its tables, for codes of one type to compare between relations
// (a join's keys); a history is what RunHistory is given, and what a run
// reads again (a benchmark, tests, query.Program.RunHistory) so keeping them pays
// their encoding once. A loader producing them instead would pay it once
// per load, but every command reading a directory or database streams its
// tuples through RunSource, tuple by tuple, to print answers as they
// settle; the columns serve whole histories.
//
// columnCache holds a history's columns, built once per table and kept
// while the table is unchanged (Table.gen and its rows' slice), and the
// dictionaries its columns share: one per entity type, one for strings.
type columnCache struct {
	mu     sync.Mutex
	dicts  map[string]*Dict // entity type's name; "" for strings
	tables map[*Table]*cachedColumns
}

type cachedColumns struct {
	gen  uint64
	rows []Tuple // the slice the columns were built from (len, cap, base)
	cols *Columns
}

// Columns returns the columns of the named relation's table, building them
// on first use and keeping them with the history: later runs over the same
// history read them again without encoding. Entity identifiers of one type
// share a dictionary across the history's tables, so their codes compare
// between relations.
//
// It returns nil when the table cannot be encoded (a value whose kind is
// not its attribute's, an enum value that is not a member) or the history
// has no such relation; the caller reads the rows instead.
//
// The columns are rebuilt when the table changes through Add, AddEvent or
// SortRows, or its Rows slice is replaced or grows; a tuple written in place
// (t.Rows[i].Vals = …) after the columns were built is not seen. A history
// made by NewHistory keeps its columns; one made otherwise builds them at
// every call. What is kept is 8 bytes per attribute and 16 per tuple of
// every table a columnar run read, for as long as the history lives, and
// the dictionaries' identifiers (shared with the tuples' strings).
func (h *History) Columns(name string) *Columns {
	t := h.Tables[name]
	if t == nil {
		return nil
	}
	c := h.cols
	if c == nil {
		return buildColumns(t, map[string]*Dict{})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := c.tables[t]; k != nil && k.gen == t.gen && sameRows(k.rows, t.Rows) {
		return k.cols
	}
	cols := buildColumns(t, c.dicts)
	c.tables[t] = &cachedColumns{gen: t.gen, rows: t.Rows, cols: cols}
	return cols
}

// sameRows reports whether a and b are the same slice: base, length and
// capacity.
func sameRows(a, b []Tuple) bool {
	if len(a) != len(b) || cap(a) != cap(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}

func newColumnCache() *columnCache {
	return &columnCache{dicts: map[string]*Dict{}, tables: map[*Table]*cachedColumns{}}
}

// buildColumns encodes t with the dictionaries of dicts (adding those it
// needs), or returns nil when it cannot (see History.Columns).
func buildColumns(t *Table, dicts map[string]*Dict) *Columns {
	attrs := t.Rel.Attrs
	n := len(t.Rows)
	c := &Columns{Len: n, Codes: make([][]int64, len(attrs)), Min: make([]int64, len(attrs)),
		Max: make([]int64, len(attrs)), Dicts: make([]*Dict, len(attrs)),
		From: make([]Time, n), To: make([]Time, n)}
	// order is the rows' order by From, stably; nil when they are in it.
	var order []int32
	for i := 1; i < n; i++ {
		if t.Rows[i-1].From > t.Rows[i].From {
			order = make([]int32, n)
			for k := range order {
				order[k] = int32(k)
			}
			slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(t.Rows[a].From, t.Rows[b].From) })
			break
		}
	}
	row := func(k int) *Tuple {
		if order != nil {
			return &t.Rows[order[k]]
		}
		return &t.Rows[k]
	}
	for k := range n {
		r := row(k)
		if len(r.Vals) != len(attrs) {
			return nil
		}
		c.From[k], c.To[k] = r.From, Clamp(r.To)
	}
	for a, attr := range attrs {
		codes := make([]int64, n)
		c.Codes[a] = codes
		kind := attr.Type.Kind
		var d *Dict
		switch kind {
		case KindEntity, KindString:
			key := ""
			if kind == KindEntity {
				key = attr.Type.Entity
			}
			if d = dicts[key]; d == nil {
				d = newDict(kind == KindEntity)
				dicts[key] = d
			}
			c.Dicts[a] = d
			d.mu.Lock()
		case KindEnum:
			if attr.Type.Enum == nil {
				return nil
			}
		case KindInvalid:
			return nil
		}
		ok := encodeColumn(codes, row, a, kind, attr.Type.Enum, d)
		if d != nil {
			d.mu.Unlock()
		}
		if !ok {
			return nil
		}
		c.Min[a], c.Max[a] = 0, -1
		if n > 0 {
			c.Min[a], c.Max[a] = slices.Min(codes), slices.Max(codes)
		}
	}
	return c
}

// encodeColumn fills codes with attribute a of each row; false when some
// value cannot be encoded. The caller holds d's lock.
func encodeColumn(codes []int64, row func(int) *Tuple, a int, kind Kind, enum *EnumType, d *Dict) bool {
	last, lastCode := "", int64(-1) // identifiers repeat: skip the map for a run
	for k := range codes {
		v := &row(k).Vals[a]
		if v.K != kind {
			return false
		}
		switch kind {
		case KindEntity, KindString:
			if lastCode < 0 || v.S != last {
				last, lastCode = v.S, d.encode(v.S)
			}
			codes[k] = lastCode
		case KindEnum:
			if v.N < 0 || v.N >= int64(len(enum.Members)) || enum.Members[v.N] != v.S {
				return false
			}
			codes[k] = v.N
		default:
			codes[k] = v.N
		}
	}
	return true
}
