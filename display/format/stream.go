package format

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/tqmon/tqmon/algebra"
)

// Stream writes result rows as they are produced, for live runs: an event
// as it happens, an interval once it has ended (Close writes those still
// open, valid until forever). CSV and JSONL rows are as Write makes them,
// each result's CSV header first; the table form writes one line per row,
// prefixed with the result's name. Several results may interleave.
type Stream struct {
	mu     sync.Mutex
	w      io.Writer
	o      Options
	rels   []*algebra.Relation
	header []bool
	open   []map[any]*algebra.Tuple
	order  [][]any
}

// NewStream prepares a stream of results of the given relations.
func NewStream(w io.Writer, o Options, rels []*algebra.Relation) *Stream {
	s := &Stream{w: w, o: o, rels: rels, header: make([]bool, len(rels)),
		open: make([]map[any]*algebra.Tuple, len(rels)), order: make([][]any, len(rels))}
	for i := range rels {
		s.open[i] = map[any]*algebra.Tuple{}
	}
	return s
}

// Begin notes that a tuple of result i (identified by id) began.
func (s *Stream) Begin(i int, id any, vals []algebra.Value, at algebra.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open[i][id] = &algebra.Tuple{Vals: vals, From: at, To: algebra.Forever}
	s.order[i] = append(s.order[i], id)
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
	return s.row(i, t)
}

// Event writes an event of result i.
func (s *Stream) Event(i int, vals []algebra.Value, at algebra.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.row(i, &algebra.Tuple{Vals: vals, From: at, To: algebra.Next(at)})
}

// Close writes the tuples still open, in the order they began.
func (s *Stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.rels {
		for _, id := range s.order[i] {
			if t := s.open[i][id]; t != nil {
				if err := s.row(i, t); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (s *Stream) row(i int, t *algebra.Tuple) error {
	rel := s.rels[i]
	switch s.o.Kind {
	case JSONL:
		return writeJSON(s.w, rel, t, s.o.Time)
	case CSV:
		if !s.header[i] {
			s.header[i] = true
			if _, err := fmt.Fprintln(s.w, strings.Join(Header(rel), ",")); err != nil {
				return err
			}
		}
		tab := &algebra.Table{Rel: rel, Rows: []algebra.Tuple{*t}}
		var b strings.Builder
		if err := Write(&b, tab, Options{Kind: CSV, Time: s.o.Time}); err != nil {
			return err
		}
		_, err := io.WriteString(s.w, strings.SplitN(b.String(), "\n", 2)[1])
		return err
	}
	name := rel.Name
	if name == "" {
		name = fmt.Sprintf("result %d", i+1)
	}
	var cells []string
	head := Header(rel)
	for j, c := range Row(rel, t, s.o.Time) {
		cells = append(cells, head[j]+"="+c)
	}
	_, err := fmt.Fprintf(s.w, "%s: %s\n", name, strings.Join(cells, " "))
	return err
}
