package tquel

import (
	"strings"
	"testing"

	"github.com/tqmon/tqmon/grammar/internal/front"
)

func id(n string) *Ident         { return &Ident{Name: n} }
func bin(op Op, x, y Expr) Expr  { return &Binary{Op: op, X: x, Y: y} }
func tbin(op Op, x, y Expr) Expr { return &TemporalBinary{Op: op, X: x, Y: y} }
func neg(x Expr) Expr            { return &Unary{Op: OpNeg, X: x} }
func not(x Expr) Expr            { return &Not{X: x} }
func timeOf(op Op, x Expr) Expr  { return &TimeOf{Op: op, X: x} }
func tunary(op Op, x Expr) Expr  { return &TemporalUnary{Op: op, X: x} }
func attr(v, a string) *AttrRef  { return &AttrRef{Var: id(v), Attr: id(a)} }
func num(text string) *NumberLit {
	return &NumberLit{Text: text, Float: strings.ContainsAny(text, ".eE")}
}
func str(s string) *StringLit { return &StringLit{Value: s} }
func dur(text string) *DurationLit {
	ns, _ := front.ParseDuration(text)
	return &DurationLit{Text: text, NS: ns}
}

// stripParens removes Paren nodes, which the formatter adds to hand-built
// trees where the structure needs them.
func stripParens(e Expr) Expr {
	switch x := e.(type) {
	case *Paren:
		return stripParens(x.X)
	case *Unary:
		return &Unary{Op: x.Op, X: stripParens(x.X)}
	case *Not:
		return &Not{X: stripParens(x.X)}
	case *TimeOf:
		return &TimeOf{Op: x.Op, X: stripParens(x.X)}
	case *TemporalUnary:
		return &TemporalUnary{Op: x.Op, X: stripParens(x.X)}
	case *Binary:
		return &Binary{Op: x.Op, X: stripParens(x.X), Y: stripParens(x.Y)}
	case *TemporalBinary:
		return &TemporalBinary{Op: x.Op, X: stripParens(x.X), Y: stripParens(x.Y)}
	case *Aggregate:
		y := *x
		y.Arg = stripParens(x.Arg)
		if x.Param != nil {
			y.Param = stripParens(x.Param)
		}
		y.By = nil
		for _, b := range x.By {
			y.By = append(y.By, stripParens(b))
		}
		if x.Where != nil {
			y.Where = stripParens(x.Where)
		}
		if x.When != nil {
			y.When = stripParens(x.When)
		}
		return &y
	}
	return e
}

// Hand-built trees get the parentheses their structure needs, and no more;
// the text parses back to the same tree.
func TestFormatExpr(t *testing.T) {
	a, b, c, d := id("a"), id("b"), id("c"), id("d")
	value := []struct {
		e    Expr
		want string
	}{
		{bin(OpMul, bin(OpAdd, a, b), c), "(a + b) * c"},
		{bin(OpAdd, a, bin(OpMul, b, c)), "a + b * c"},
		{bin(OpSub, bin(OpSub, a, b), c), "a - b - c"},
		{bin(OpSub, a, bin(OpSub, b, c)), "a - (b - c)"},
		{bin(OpEq, bin(OpEq, a, b), c), "(a = b) = c"},
		{bin(OpLt, a, bin(OpGt, b, c)), "a < (b > c)"},
		{bin(OpEq, not(a), b), "(not a) = b"},
		{bin(OpAnd, not(a), b), "not a and b"},
		{not(bin(OpAnd, a, b)), "not (a and b)"},
		{not(bin(OpEq, a, b)), "not a = b"},
		{bin(OpMul, neg(a), b), "-a * b"},
		{neg(bin(OpMul, a, b)), "-(a * b)"},
		{neg(neg(a)), "- -a"},
		{neg(neg(neg(a))), "- - -a"},
		{bin(OpSub, a, neg(b)), "a - -b"},
		{neg(bin(OpAdd, a, b)), "-(a + b)"},
		{bin(OpEq, bin(OpAdd, a, not(bin(OpEq, b, c))), d), "(a + not b = c) = d"},
		{bin(OpMul, a, not(bin(OpEq, b, c))), "a * not b = c"},
		{bin(OpOr, bin(OpAnd, a, b), c), "a and b or c"},
		{bin(OpAnd, bin(OpOr, a, b), c), "(a or b) and c"},
		{bin(OpAnd, a, bin(OpAnd, b, c)), "a and (b and c)"},
		{bin(OpSub, timeOf(OpEndOf, id("w")), timeOf(OpBeginOf, id("w"))), "end of w - begin of w"},
		{timeOf(OpEndOf, tbin(OpOverlap, a, b)), "end of (a overlap b)"},
		{bin(OpMod, attr("p", "x"), num("1.5")), "p.x % 1.5"},
		{bin(OpNe, str("a\"b\\c\nd\te\rf"), &ParamRef{Name: "p"}), `"a\"b\\c\nd\te\rf" != $p`},
		{&Aggregate{Func: AggCountU, Arg: bin(OpAdd, a, b), By: []Expr{attr("p", "x"), c},
			Window: Window{Kind: WindowMoving, Size: dur("1h30m")},
			Where:  bin(OpGt, a, num("0")), When: tbin(OpOverlap, id("p"), str("now"))},
			`countU(a + b by p.x, c for each 1h30m where a > 0 when p overlap "now")`},
		{&Aggregate{Func: AggMax, Arg: a, Window: Window{Kind: WindowEver}}, "max(a for ever)"},
		{bin(OpMul, &Aggregate{Func: AggAny, Arg: a}, &Paren{X: bin(OpAdd, a, b)}), "any(a) * (a + b)"},
		{&Aggregate{Func: AggPercentile, Arg: a, Param: num("99.9"), By: []Expr{c}, Window: Window{Kind: WindowEver}},
			"percentile(a, 99.9 by c for ever)"},
		{&Aggregate{Func: AggHistogram, Arg: a, Param: dur("10ms")}, "histogram(a, 10ms)"},
		{&Aggregate{Func: AggStddev, Arg: bin(OpSub, a, b)}, "stddev(a - b)"},
	}
	for _, tt := range value {
		got := FormatExpr(tt.e)
		if got != tt.want {
			t.Errorf("got %s, want %s", got, tt.want)
			continue
		}
		f := frontEnd.ParseOK(t, "retrieve (x = "+got+")")
		back := f.Stmts[0].(*RetrieveStmt).Targets[0].Expr
		if dump(stripParens(back)) != dump(stripParens(tt.e)) {
			t.Errorf("%s parses as %s, want %s", got, dump(back), dump(tt.e))
		}
		if again := FormatExpr(back); again != got {
			t.Errorf("not stable: %s then %s", got, again)
		}
	}

	temporal := []struct {
		e    Expr
		want string
	}{
		{tbin(OpPrecede, tbin(OpOverlap, a, b), c), "a overlap b precede c"},
		{tbin(OpOverlap, a, tbin(OpOverlap, b, c)), "a overlap (b overlap c)"},
		{tbin(OpOverlap, tbin(OpExtend, a, b), c), "a extend b overlap c"},
		{tbin(OpEqual, tbin(OpPrecede, a, b), c), "(a precede b) equal c"},
		{tunary(OpBeginOf, tbin(OpOverlap, a, b)), "begin of (a overlap b)"},
		{tbin(OpOverlap, tunary(OpBeginOf, a), b), "begin of a overlap b"},
		{tunary(OpEndOf, tunary(OpBeginOf, a)), "end of begin of a"},
		{bin(OpAnd, not(tbin(OpPrecede, a, b)), tbin(OpEqual, c, d)), "not a precede b and c equal d"},
		{tbin(OpPrecede, not(a), b), "(not a) precede b"},
		{bin(OpOr, a, bin(OpOr, b, str("now"))), `a or (b or "now")`},
	}
	for _, tt := range temporal {
		got := FormatExpr(tt.e)
		if got != tt.want {
			t.Errorf("got %s, want %s", got, tt.want)
			continue
		}
		f := frontEnd.ParseOK(t, "retrieve (p.x) when "+got)
		back := f.Stmts[0].(*RetrieveStmt).When
		if dump(stripParens(back)) != dump(stripParens(tt.e)) {
			t.Errorf("%s parses as %s, want %s", got, dump(back), dump(tt.e))
		}
		if again := FormatExpr(back); again != got {
			t.Errorf("not stable: %s then %s", got, again)
		}
	}
}

func TestFormatStmt(t *testing.T) {
	tests := []struct {
		s    Stmt
		want string
	}{
		{&RangeStmt{Var: id("c"), Rel: id("Clock"), Index: &IntLit{Value: 10}}, "range of c is Clock[10]"},
		{&RetrieveStmt{Into: true, Name: id("R"), Unique: true,
			Targets: []*Target{{Name: id("N"), Expr: num("1")}, {Expr: &AttrRef{Var: id("p"), All: true}}},
			Valid:   &ValidClause{From: tunary(OpBeginOf, id("p")), To: str("forever")},
			Where:   bin(OpEq, attr("p", "x"), num("2")),
			When:    tbin(OpOverlap, id("p"), id("q")),
			AsOf:    &AsOfClause{At: str("now")}},
			`retrieve into R unique (N = 1, p.all) valid from begin of p to "forever" where p.x = 2 when p overlap q as of "now"`},
	}
	for _, tt := range tests {
		if got := FormatStmt(tt.s); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
		frontEnd.RoundTrip(t, frontEnd.ParseOK(t, tt.want))
	}
}
