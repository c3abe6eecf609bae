package expr

import (
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/source"
)

// TExpr is a temporal expression. Its value is a span [b, e) — or empty —
// and its kind, event or interval, is static.
type TExpr interface {
	// IsEvent reports the expression's kind.
	IsEvent() bool
	String() string
	isT()
}

// TVar is the valid time of range variable Var.
type TVar struct {
	Var   int
	Name  string
	Event bool // the variable ranges over an event relation
}

// TConst is a time constant: an event at T.
type TConst struct {
	T   algebra.Time
	Txt string // as written ("now", "2:00:05", ...)
}

// TAll is the whole time line [beginning, forever): the overlap of no
// variables, used by the default valid clause of a retrieve without range
// variables.
type TAll struct{}

// TBeginEnd is `begin of X` (End false) or `end of X` (End true).
type TBeginEnd struct {
	End bool
	X   TExpr
}

// TAfter is the event at X's end — the chronon just after X, whether X is
// an event or an interval (unlike `end of`, which is X itself for an
// event). TQuel has no syntax for it: the rewriter uses it to say "from the
// chronon after u" when it derives what an α must enable.
type TAfter struct {
	X TExpr
}

// TBinary is `X overlap Y` (Extend false) or `X extend Y` (Extend true).
type TBinary struct {
	Extend bool
	X, Y   TExpr
}

func (e *TVar) IsEvent() bool    { return e.Event }
func (*TConst) IsEvent() bool    { return true }
func (*TAll) IsEvent() bool      { return false }
func (*TBeginEnd) IsEvent() bool { return true }
func (*TAfter) IsEvent() bool    { return true }
func (*TAfter) isT()             {}
func (e *TAfter) String() string { return "after " + tparen(e.X) }
func (e *TBinary) IsEvent() bool { return !e.Extend && (e.X.IsEvent() || e.Y.IsEvent()) }
func (*TVar) isT()               {}
func (*TConst) isT()             {}
func (*TAll) isT()               {}
func (*TBeginEnd) isT()          {}
func (*TBinary) isT()            {}
func (e *TVar) String() string   { return e.Name }
func (e *TConst) String() string { return `"` + e.constText() + `"` }
func (*TAll) String() string     { return `("beginning" extend "forever")` }
func (e *TConst) constText() string {
	if e.Txt != "" {
		return e.Txt
	}
	return algebra.FormatTime(e.T, algebra.TimeAuto)
}
func (e *TBeginEnd) String() string {
	kw := "begin of "
	if e.End {
		kw = "end of "
	}
	return kw + tparen(e.X)
}
func (e *TBinary) String() string {
	op := " overlap "
	if e.Extend {
		op = " extend "
	}
	// Left-associative.
	y := e.Y.String()
	if _, ok := e.Y.(*TBinary); ok {
		y = "(" + y + ")"
	}
	return e.X.String() + op + y
}

func tparen(e TExpr) string {
	if _, ok := e.(*TBinary); ok {
		return "(" + e.String() + ")"
	}
	return e.String()
}

// PredOp is a temporal comparison.
type PredOp uint8

const (
	Precede PredOp = iota + 1
	Overlap
	Equal
)

func (o PredOp) String() string {
	switch o {
	case Precede:
		return "precede"
	case Overlap:
		return "overlap"
	case Equal:
		return "equal"
	}
	return "?"
}

// Pred is a temporal predicate (the when clause).
type Pred interface {
	String() string
	isPred()
}

// PTrue is the predicate that always holds (the default when clause of a
// retrieve with fewer than two variables).
type PTrue struct{}

// PCmp is `X precede|overlap|equal Y`.
type PCmp struct {
	Op   PredOp
	X, Y TExpr
	At   source.Pos
}

// PAnd, POr and PNot combine predicates.
type PAnd struct{ X, Y Pred }
type POr struct{ X, Y Pred }
type PNot struct{ X Pred }

func (*PTrue) isPred()         {}
func (*PCmp) isPred()          {}
func (*PAnd) isPred()          {}
func (*POr) isPred()           {}
func (*PNot) isPred()          {}
func (*PTrue) String() string  { return "true" }
func (p *PCmp) String() string { return p.X.String() + " " + p.Op.String() + " " + p.Y.String() }
func (p *PAnd) String() string { return pparen(p.X, 2) + " and " + pparen(p.Y, 3) }
func (p *POr) String() string  { return pparen(p.X, 1) + " or " + pparen(p.Y, 2) }
func (p *PNot) String() string { return "not " + pparen(p.X, 3) }
func pprec(p Pred) int {
	switch p.(type) {
	case *POr:
		return 1
	case *PAnd:
		return 2
	case *PNot:
		return 3
	}
	return 4
}
func pparen(p Pred, min int) string {
	if pprec(p) < min {
		return "(" + p.String() + ")"
	}
	return p.String()
}

// Valid is the valid clause: `valid at At` (an event result) or `valid from
// From to To` (an interval result).
type Valid struct {
	At       TExpr
	From, To TExpr
}

// IsEvent reports whether the clause makes an event relation.
func (v *Valid) IsEvent() bool { return v.At != nil }

func (v *Valid) String() string {
	if v.At != nil {
		return "valid at " + v.At.String()
	}
	return "valid from " + v.From.String() + " to " + v.To.String()
}

// TVars returns the set of variables a temporal expression mentions.
func TVars(e TExpr) uint64 {
	switch e := e.(type) {
	case *TVar:
		return 1 << uint(e.Var)
	case *TBeginEnd:
		return TVars(e.X)
	case *TAfter:
		return TVars(e.X)
	case *TBinary:
		return TVars(e.X) | TVars(e.Y)
	}
	return 0
}

// PVars returns the set of variables a predicate mentions.
func PVars(p Pred) uint64 {
	switch p := p.(type) {
	case *PCmp:
		return TVars(p.X) | TVars(p.Y)
	case *PAnd:
		return PVars(p.X) | PVars(p.Y)
	case *POr:
		return PVars(p.X) | PVars(p.Y)
	case *PNot:
		return PVars(p.X)
	}
	return 0
}

// PConjuncts splits p at its top-level ands.
func PConjuncts(p Pred) []Pred {
	if a, ok := p.(*PAnd); ok {
		return append(PConjuncts(a.X), PConjuncts(a.Y)...)
	}
	if _, ok := p.(*PTrue); ok || p == nil {
		return nil
	}
	return []Pred{p}
}

// PAndOf joins predicate conjuncts; none gives PTrue.
func PAndOf(ps []Pred) Pred {
	var out Pred
	for _, p := range ps {
		if out == nil {
			out = p
		} else {
			out = &PAnd{X: out, Y: p}
		}
	}
	if out == nil {
		return &PTrue{}
	}
	return out
}

// VarNames prints a variable set using the given names.
func VarNames(set uint64, names []string) string {
	var parts []string
	for i, n := range names {
		if set&(1<<uint(i)) != 0 {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, ", ")
}
