package parquet

import (
	"fmt"
	"math"
	"strings"

	pq "github.com/parquet-go/parquet-go"

	"github.com/tqmon/tqmon/algebra"
)

// The columns every file has besides the relation's attributes (their
// names cannot be an SDL attribute's: SDL names start with a letter and
// hold no '_' … but "host" could be one, so a relation with an attribute
// named Host in any case uses that attribute as its host column and gets
// no column of its own; see hostColumn).
const (
	colHost = "host"
	colFrom = "from_ns"
	colTo   = "to_ns"
	colAt   = "at_ns"
)

// schema is one relation's file layout: the parquet schema, and for each
// leaf column (in the schema's order, which parquet-go sorts by name)
// what it holds.
type schema struct {
	rel    *algebra.Relation
	pq     *pq.Schema
	cols   []column
	hostAt int // the attribute that is the host column, or -1
}

// column is one leaf column: an attribute (attr ≥ 0) or one of the fixed
// columns (attr < 0, name says which).
type column struct {
	name string
	attr int
}

// hostAttr is the index of a relation's Host attribute (a string or
// entity attribute named Host in any case), or -1.
func hostAttr(r *algebra.Relation) int {
	for i, a := range r.Attrs {
		if strings.EqualFold(a.Name, colHost) && (a.Type.Kind == algebra.KindString || a.Type.Kind == algebra.KindEntity) {
			return i
		}
	}
	return -1
}

// newSchema lays out relation r: host (string), each attribute as its
// kind says, and from_ns/to_ns (to_ns NULL: still open at the end of the
// recording) or at_ns, all int64 nanoseconds since the epoch.
func newSchema(r *algebra.Relation) (*schema, error) {
	s := &schema{rel: r, hostAt: hostAttr(r)}
	g := pq.Group{}
	seen := map[string]bool{}
	add := func(name string, n pq.Node) error {
		if seen[strings.ToLower(name)] {
			return fmt.Errorf("relation %s: column %s twice (names are compared without case, as SQL engines do)", r.Name, name)
		}
		seen[strings.ToLower(name)] = true
		g[name] = n
		return nil
	}
	for i, a := range r.Attrs {
		var n pq.Node
		switch a.Type.Kind {
		case algebra.KindInt, algebra.KindTime, algebra.KindDuration:
			n = pq.Int(64)
		case algebra.KindFloat:
			n = pq.Leaf(pq.DoubleType)
		case algebra.KindBool:
			n = pq.Leaf(pq.BooleanType)
		case algebra.KindString, algebra.KindEntity, algebra.KindEnum:
			n = pq.String()
		default:
			return nil, fmt.Errorf("relation %s: attribute %s of kind %v has no column type", r.Name, a.Name, a.Type.Kind)
		}
		if err := add(a.Name, n); err != nil {
			return nil, err
		}
		_ = i
	}
	if s.hostAt < 0 {
		if err := add(colHost, pq.String()); err != nil {
			return nil, err
		}
	}
	if r.IsEvent() {
		if err := add(colAt, pq.Int(64)); err != nil {
			return nil, err
		}
	} else {
		if err := add(colFrom, pq.Int(64)); err != nil {
			return nil, err
		}
		if err := add(colTo, pq.Optional(pq.Int(64))); err != nil {
			return nil, err
		}
	}
	s.pq = pq.NewSchema(r.Name, g)
	for _, path := range s.pq.Columns() {
		name := path[0]
		s.cols = append(s.cols, column{name: name, attr: r.AttrIndex(name)})
	}
	return s, nil
}

// row is one stored tuple: its host, values and times (to Forever: open).
type row struct {
	host     string
	vals     []algebra.Value
	from, to algebra.Time
}

// encode makes the parquet row of a tuple.
func (s *schema) encode(r row, buf pq.Row) pq.Row {
	buf = buf[:0]
	for ci, c := range s.cols {
		var v pq.Value
		def := 0
		switch {
		case c.attr >= 0:
			v = encodeValue(r.vals[c.attr])
		case c.name == colHost:
			v = pq.ByteArrayValue([]byte(r.host))
		case c.name == colFrom, c.name == colAt:
			v = pq.Int64Value(r.from)
		case c.name == colTo:
			if r.to == algebra.Forever {
				v = pq.NullValue()
			} else {
				v, def = pq.Int64Value(r.to), 1
			}
		}
		buf = append(buf, v.Level(0, def, ci))
	}
	return buf
}

func encodeValue(v algebra.Value) pq.Value {
	switch v.K {
	case algebra.KindInt, algebra.KindTime, algebra.KindDuration:
		return pq.Int64Value(v.N)
	case algebra.KindFloat:
		return pq.DoubleValue(math.Float64frombits(uint64(v.N)))
	case algebra.KindBool:
		return pq.BooleanValue(v.N != 0)
	default:
		return pq.ByteArrayValue([]byte(v.S))
	}
}

// reader maps a file's columns (found by name: a file written with its
// columns in another order, or by another engine, reads the same) to a
// relation's tuple.
type reader struct {
	rel      *algebra.Relation
	attrCol  []int // attribute → column index
	hostCol  int
	from, to int // column indexes (to −1 for events)
}

func newReader(r *algebra.Relation, f *pq.File, path string) (*reader, error) {
	idx := map[string]int{}
	for i, p := range f.Schema().Columns() {
		idx[p[0]] = i
	}
	find := func(name string) (int, error) {
		if i, ok := idx[name]; ok {
			return i, nil
		}
		return 0, fmt.Errorf("%s: no column %s (relation %s)", path, name, r.Name)
	}
	rd := &reader{rel: r, to: -1}
	for _, a := range r.Attrs {
		i, err := find(a.Name)
		if err != nil {
			return nil, err
		}
		rd.attrCol = append(rd.attrCol, i)
	}
	var err error
	if h := hostAttr(r); h >= 0 {
		rd.hostCol = rd.attrCol[h]
	} else if rd.hostCol, err = find(colHost); err != nil {
		return nil, err
	}
	if r.IsEvent() {
		rd.from, err = find(colAt)
		return rd, err
	}
	if rd.from, err = find(colFrom); err != nil {
		return nil, err
	}
	rd.to, err = find(colTo)
	return rd, err
}

// decode reads a parquet row as a tuple.
func (rd *reader) decode(r pq.Row) (row, error) {
	var out row
	out.vals = make([]algebra.Value, len(rd.rel.Attrs))
	for i, a := range rd.rel.Attrs {
		v := r[rd.attrCol[i]]
		if v.IsNull() {
			return out, fmt.Errorf("attribute %s is null", a.Name)
		}
		switch a.Type.Kind {
		case algebra.KindInt:
			out.vals[i] = algebra.Int(v.Int64())
		case algebra.KindTime:
			out.vals[i] = algebra.TimeVal(v.Int64())
		case algebra.KindDuration:
			out.vals[i] = algebra.DurationVal(v.Int64())
		case algebra.KindFloat:
			out.vals[i] = algebra.Float(v.Double())
		case algebra.KindBool:
			out.vals[i] = algebra.Bool(v.Boolean())
		case algebra.KindString:
			out.vals[i] = algebra.Str(string(v.ByteArray()))
		case algebra.KindEntity:
			out.vals[i] = algebra.Entity(string(v.ByteArray()))
		case algebra.KindEnum:
			name := string(v.ByteArray())
			ord := a.Type.Enum.Ordinal(name)
			if ord < 0 {
				return out, fmt.Errorf("attribute %s: %q is no member of its enumeration", a.Name, name)
			}
			out.vals[i] = algebra.Enum(name, ord)
		}
	}
	out.host = string(r[rd.hostCol].ByteArray())
	out.from = r[rd.from].Int64()
	out.to = out.from
	if rd.to >= 0 {
		if v := r[rd.to]; v.IsNull() {
			out.to = algebra.Forever
		} else {
			out.to = v.Int64()
		}
	}
	return out, nil
}
