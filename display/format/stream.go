package format

import (
	"cmp"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/tqmon/tqmon/algebra"
)

// Stream writes result rows as they are produced, for live runs: an event
// as it happens, an interval once it has ended (Close writes those still
// open, valid until forever, their end written as open or left empty). CSV and JSONL rows are as Write makes them,
// each result's CSV header first; the table form writes one line per row,
// prefixed with the result's name. Several results may interleave: JSONL
// rows carry the result's name ("relation", RelName), and when there are
// several results CSV rows begin with a relation column, so a stream can
// be split. It keeps only the tuples still open.
type Stream struct {
	mu     sync.Mutex
	w      io.Writer
	o      Options
	rels   []*algebra.Relation
	header []bool
	open   []map[any]*openTuple
	seq    uint64
	buf    []byte
	// The table form's line prefixes: per result, its name and each
	// column's "name=".
	name  []string
	heads [][]string
	rw    []rowWriter // per result: its CSV and JSONL rows
	texts texts       // the table form's last RFC 3339 second
}

// openTuple is a tuple begun and not yet ended, and when it began among
// the others.
type openTuple struct {
	algebra.Tuple
	seq uint64
}

// NewStream prepares a stream of results of the given relations.
func NewStream(w io.Writer, o Options, rels []*algebra.Relation) *Stream {
	s := &Stream{w: w, o: o, rels: rels, header: make([]bool, len(rels)),
		open: make([]map[any]*openTuple, len(rels)), name: make([]string, len(rels)), heads: make([][]string, len(rels))}
	for i, rel := range rels {
		s.open[i] = map[any]*openTuple{}
		s.name[i] = RelName(rel, i)
		s.rw = append(s.rw, rowWriter{rel: rel, tf: o.Time})
		for _, h := range Header(rel) {
			s.heads[i] = append(s.heads[i], h+"=")
		}
	}
	return s
}

// Begin notes that a tuple of result i (identified by id) began.
func (s *Stream) Begin(i int, id any, vals []algebra.Value, at algebra.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.open[i][id] = &openTuple{Tuple: algebra.Tuple{Vals: vals, From: at, To: algebra.Forever}, seq: s.seq}
}

// End writes the tuple id of result i, which ended at t.
func (s *Stream) End(i int, id any, at algebra.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.open[i][id]
	if t == nil {
		return nil
	}
	delete(s.open[i], id)
	t.To = at
	return s.row(i, &t.Tuple)
}

// Event writes an event of result i.
func (s *Stream) Event(i int, vals []algebra.Value, at algebra.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := algebra.Tuple{Vals: vals, From: at, To: algebra.Next(at)}
	return s.row(i, &t)
}

// Close writes the tuples still open, in the order they began.
func (s *Stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.rels {
		open := slices.SortedFunc(maps.Values(s.open[i]), func(a, b *openTuple) int { return cmp.Compare(a.seq, b.seq) })
		clear(s.open[i])
		for _, t := range open {
			if err := s.row(i, &t.Tuple); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Stream) row(i int, t *algebra.Tuple) error {
	rel := s.rels[i]
	switch s.o.Kind {
	case JSONL:
		s.buf = s.rw[i].jsonRow(s.buf[:0], s.name[i], t)
		_, err := s.w.Write(s.buf)
		return err
	case CSV:
		b := s.buf[:0]
		prefix := ""
		if len(s.rels) > 1 {
			prefix = s.name[i]
		}
		if !s.header[i] {
			s.header[i] = true
			h := Header(rel)
			if prefix != "" {
				h = append([]string{"relation"}, h...)
			}
			b = s.rw[i].csvRecord(b, h)
		}
		s.buf = s.rw[i].csvRow(b, prefix, t)
		_, err := s.w.Write(s.buf)
		return err
	}
	b := append(s.buf[:0], s.name[i]...)
	b = append(b, ": "...)
	head := s.heads[i]
	for j, v := range t.Vals {
		if j > 0 {
			b = append(b, ' ')
		}
		b = append(b, head[j]...)
		b = appendValue(b, v, s.o.Time, &s.texts)
	}
	n := len(t.Vals)
	if n > 0 {
		b = append(b, ' ')
	}
	b = append(b, head[n]...)
	b = s.texts.appendTime(b, t.From, s.o.Time)
	if !rel.IsEvent() {
		b = append(b, ' ')
		b = append(b, head[n+1]...)
		if t.To == algebra.Forever {
			b = append(b, Open...)
		} else {
			b = s.texts.appendTime(b, t.To, s.o.Time)
		}
	}
	b = append(b, '\n')
	s.buf = b
	_, err := s.w.Write(b)
	return err
}
