package subject

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/resident/fleet"
)

// resumeStmts are two results: events (A) and intervals (B).
func resumeStmts() []*check.Retrieve {
	attrs := []algebra.Attr{{Name: "Host", Type: algebra.Type{Kind: algebra.KindString}}}
	return []*check.Retrieve{
		{Result: &algebra.Relation{Name: "A", Class: algebra.ClassEvent, Attrs: attrs, FlagHolder: -1}},
		{Result: &algebra.Relation{Name: "B", Class: algebra.ClassInterval, Attrs: attrs, FlagHolder: -1}},
	}
}

type stmtElem struct {
	i int
	e stream.Elem
}

// resumeElems are each statement's elements, in time order, several at
// one time; interleave merges them: A's first when a, else B's (as two
// runs may, the statements' results settling at other moments).
func resumeElems() [2][]stream.Elem {
	var es [2][]stream.Elem
	for t := algebra.Time(1); t <= 40; t++ {
		for k := range int(t%3) + 1 { // up to three events at one time, two alike
			es[0] = append(es[0], stream.Elem{Kind: stream.Event, T: t, Rec: &stream.Rec{Vals: []algebra.Value{algebra.Str([]string{"h1", "h2", "h2"}[k])}, From: t}})
		}
		if t%4 == 0 {
			r := &stream.Rec{Vals: []algebra.Value{algebra.Str("b")}, From: t}
			es[1] = append(es[1], stream.Elem{Kind: stream.Begin, T: t, Rec: r}, stream.Elem{Kind: stream.End, T: t + 2, Rec: r})
		}
	}
	slices.SortStableFunc(es[1], func(a, b stream.Elem) int { return stream.Compare(a, b) })
	return es
}

func interleave(es [2][]stream.Elem, step [2]int) []stmtElem {
	var out []stmtElem
	i := [2]int{}
	for i[0] < len(es[0]) || i[1] < len(es[1]) {
		for s := range 2 {
			for k := 0; k < step[s] && i[s] < len(es[s]); k++ {
				out = append(out, stmtElem{s, es[s][i[s]]})
				i[s]++
			}
		}
	}
	return out
}

// TestPrinterResumes: a printer killed after a commit, and a printer
// resumed from its marks that gets the same statements' elements in
// another interleaving (as a resumed monitor does: when a statement's
// results settle depends on how the frames arrived), print together each
// row once: the committed bytes, then the resumed printer's. A cut by
// time alone (every element up to the watermark) would lose or repeat
// the rows at the cut's time.
func TestPrinterResumes(t *testing.T) {
	es := resumeElems()
	var whole bytes.Buffer
	p := NewPrinter(&whole, format.Options{Kind: format.CSV}, resumeStmts())
	for _, x := range interleave(es, [2]int{1, 1}) {
		p.Elem(x.i, x.e)
	}
	p.Close()
	for cut := 5; cut < 60; cut += 7 {
		var first bytes.Buffer
		p := NewPrinter(&first, format.Options{Kind: format.CSV}, resumeStmts())
		p.marks = make([]fleet.Mark, 2)
		for _, x := range interleave(es, [2]int{3, 1})[:cut] {
			p.Elem(x.i, x.e)
		}
		p.Settle()
		n, marks := p.written()
		// Killed: whatever it printed after the commit is taken back.
		committed := first.Bytes()[:n]
		var rest bytes.Buffer
		q := NewPrinter(&rest, format.Options{Kind: format.CSV}, resumeStmts())
		q.resumed, q.marks = marks, make([]fleet.Mark, 2)
		for _, x := range interleave(es, [2]int{1, 4}) {
			q.Elem(x.i, x.e)
		}
		q.Close()
		got, want := lines(string(committed)+rest.String()), lines(whole.String())
		if !slices.Equal(got, want) {
			t.Fatalf("cut after %d elements: %d rows, want %d\ngot:  %q\nwant: %q", cut, len(got), len(want), got, want)
		}
	}
}

func lines(s string) []string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(ls)
	return ls
}
