package check

import (
	"fmt"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/grammar/tquel"
)

// This file lists every message the checker reports: each is a method of
// report, named for the mistake, so the wording lives in one place. A
// statement's checker reports through fail, which also marks the
// statement as failed.

// report collects the diagnostics of one Check call, each at a place in
// the file being checked.
type report struct {
	file string
	src  *source.File // nil for a tree not made by tquel.Parse
	errs source.ErrorList
}

func (r *report) at(pos source.Pos, format string, args ...any) {
	r.errs.AddIn(r.src, r.file, pos, format, args...)
}

// fail marks the statement as failed and returns the report to say why.
func (c *stmtChecker) fail() *report {
	c.bad = true
	return c.rep
}

// ---- range declarations and results ----

func (r *report) clockDivisor(pos source.Pos, n int64) {
	r.at(pos, "Clock[%d]: the tick divisor must be at least 1", n)
}

func (r *report) notClock(pos source.Pos, rel string) {
	r.at(pos, "%s[...]: only Clock takes a tick divisor", rel)
}

func (r *report) unknownRelation(pos source.Pos, name string, known []string) {
	r.at(pos, "unknown relation %s%s", name, source.Suggest(name, known))
}

func (r *report) alreadyDefined(pos source.Pos, name string, old *algebra.Relation) {
	where := ""
	if old.Pos.IsValid() {
		file := ""
		if old.File != "" && old.File != r.file {
			file = old.File + ":"
		}
		where = fmt.Sprintf(" (at %s%s)", file, old.Pos)
	}
	r.at(pos, "relation %s is already defined%s", name, where)
}

func (r *report) builtinResult(pos source.Pos, name string) {
	r.at(pos, "%s is built in (the observation) and cannot name a result", name)
}

func (r *report) clockResult(pos source.Pos) {
	r.at(pos, "Clock is built in and cannot name a result")
}

// ---- range variables and targets ----

func (r *report) tooManyVars(pos source.Pos, n int) {
	r.at(pos, "a query may use at most 63 range variables, not %d", n)
}

func (r *report) unknownVar(pos source.Pos, name string, declared []string) {
	hint := source.Suggest(name, declared)
	if hint == "" {
		hint = fmt.Sprintf(" (declare it: range of %s is RELATION)", name)
	}
	r.at(pos, "unknown range variable %s%s", name, hint)
}

func (r *report) unknownAttr(pos source.Pos, v *Var, name string) {
	var names []string
	for _, a := range v.Rel.Attrs {
		names = append(names, a.Name)
	}
	hint := source.Suggest(name, names)
	if len(names) == 0 {
		hint = " (it has no explicit attributes)"
	}
	r.at(pos, "%s (%s) has no attribute %s%s", v.Name, article(v.Rel.Name), name, hint)
}

func (r *report) allNotTarget(pos source.Pos, v string) {
	r.at(pos, "%s.all is only allowed as a whole target", v)
}

func (r *report) allNoAttrs(pos source.Pos, v *Var) {
	r.at(pos, "%s.all: %s has no explicit attributes", v.Name, v.Rel.Name)
}

func (r *report) unnamedTarget(pos source.Pos) {
	r.at(pos, "a target needs a name: NAME = expression")
}

func (r *report) duplicateTarget(pos source.Pos, name string, first source.Pos) {
	r.at(pos, "duplicate target name %s (first at %s); name it with NAME = ...", name, first)
}

func (r *report) reservedTarget(pos source.Pos, name string) {
	r.at(pos, "target name %s is reserved for valid time (from, to, at)", name)
}

func (r *report) whereNotCondition(pos source.Pos, t algebra.Type) {
	r.at(pos, "where clause must be a condition, but this is %s", article(t.String()))
}

func (r *report) asOfNotNow(pos source.Pos) {
	r.at(pos, `only as of "now" is accepted: tqmon relations have valid time only`)
}

// ---- temporal expressions and predicates ----

func (r *report) varNotCollected(pos source.Pos, name string) {
	r.at(pos, "internal: range variable %s not collected", name)
}

func (r *report) notRangeVar(pos source.Pos, name string) {
	r.at(pos, "%s is not a range variable; a temporal expression needs a range variable, a quoted time, begin of or end of", name)
}

func (r *report) predicateNotTime(pos source.Pos, op tquel.Op) {
	r.at(pos, "%s is a predicate, but a temporal expression is expected here", op)
}

func (r *report) connectiveNotTime(pos source.Pos, op tquel.Op) {
	r.at(pos, "%s combines predicates, but a temporal expression is expected here", op)
}

func (r *report) notNotTime(pos source.Pos) {
	r.at(pos, "not negates a predicate, but a temporal expression is expected here")
}

func (r *report) timeExpected(pos source.Pos) {
	r.at(pos, "a temporal expression is expected here (a range variable, a quoted time, begin of, end of, overlap or extend)")
}

func (r *report) timeNotPredicate(pos source.Pos, op tquel.Op) {
	r.at(pos, "%s makes a temporal expression, but a predicate (precede, overlap or equal) is expected here", op)
}

func (r *report) predicateExpected(pos source.Pos) {
	r.at(pos, "a temporal predicate is expected here: X precede Y, X overlap Y or X equal Y, combined with and, or, not")
}

// badTime reports a time literal algebra.ParseTime rejects.
func (r *report) badTime(pos source.Pos, err error) {
	r.at(pos, "%v", err)
}

// ---- literals ----

func (r *report) noParam(pos source.Pos, name string) {
	r.at(pos, "no value for $%s (pass --param %s=VALUE)", name, name)
}

func (r *report) varAsValue(pos source.Pos, name string) {
	r.at(pos, "range variable %s used as a value; write %s.ATTRIBUTE", name, name)
}

func (r *report) unknownName(pos source.Pos, name string) {
	r.at(pos, "unknown name %s: quote a string (\"%s\"); a bare name is an entity or enum literal only when compared with an attribute of that type", name, name)
}

func (r *report) notMember(pos source.Pos, name string, t algebra.Type) {
	r.at(pos, "%s is not a member of %s", name, t)
}

func (r *report) bareString(pos source.Pos, name string) {
	r.at(pos, "bare name %s compared with a string: quote it (\"%s\")", name, name)
}

func (r *report) notBool(pos source.Pos, text string) {
	r.at(pos, "%s is not a bool (true or false)", text)
}

func (r *report) cannotBe(l *literal, t algebra.Type) {
	what := map[literalKind]string{litBare: "bare name", litString: "string", litParam: "parameter value"}[l.kind]
	r.at(l.pos, "%s %q cannot be %s", what, l.text, article(t.String()))
}

func (r *report) badNumber(pos source.Pos, text string) {
	r.at(pos, "bad number %s", text)
}

func (r *report) intRange(pos source.Pos, text string) {
	r.at(pos, "integer %s is out of range", text)
}

// ---- value expressions ----

func (r *report) cannotNegate(pos source.Pos, t algebra.Type) {
	r.at(pos, "cannot negate %s", article(t.String()))
}

func (r *report) notNeedsCondition(pos source.Pos, t algebra.Type) {
	r.at(pos, "not needs a condition, but this is %s", article(t.String()))
}

func (r *report) temporalInValue(pos source.Pos, op tquel.Op) {
	r.at(pos, "temporal operator %s is not allowed in a value expression (use it in a when clause)", op)
}

func (r *report) timeOfUnsupported(pos source.Pos, op tquel.Op) {
	r.at(pos, "%s in a value expression is not supported yet", op)
}

func (r *report) unexpectedExpr(pos source.Pos) {
	r.at(pos, "unexpected expression")
}

func (r *report) operatorNotAllowed(pos source.Pos, op tquel.Op) {
	r.at(pos, "operator %s is not allowed here", op)
}

func (r *report) needsConditions(pos source.Pos, op expr.Op, t algebra.Type) {
	r.at(pos, "%s needs conditions on both sides, but this is %s", op, article(t.String()))
}

func (r *report) cannotCompare(pos source.Pos, x, y algebra.Type) {
	r.at(pos, "cannot compare %s with %s", x, y)
}

func (r *report) notOrdered(pos source.Pos, t algebra.Type) {
	r.at(pos, "%s values are not ordered: only = and != compare them", t)
}

func (r *report) cannotApply(pos source.Pos, op expr.Op, x, y algebra.Type) {
	r.at(pos, "cannot apply %s to %s and %s", op, x, y)
}

// ---- aggregates ----

func (r *report) unknownAggregate(pos source.Pos) {
	r.at(pos, "unknown aggregate")
}

func (r *report) aggregateDepth(pos source.Pos) {
	r.at(pos, "aggregates nest at most %d deep", maxAggDepth)
}

func (r *report) aggregateInBy(pos source.Pos) {
	r.at(pos, "a by list cannot contain an aggregate")
}

func (r *report) windowNeedsSize(pos source.Pos) {
	r.at(pos, "for each needs a duration")
}

func (r *report) windowNotPositive(pos source.Pos, size string) {
	r.at(pos, "a moving window must be longer than 0, not %s", size)
}

func (r *report) sumType(pos source.Pos, fn expr.AggFunc, t algebra.Type) {
	r.at(pos, "%s adds numbers or durations, not %s values", fn, t)
}

func (r *report) avgType(pos source.Pos, fn expr.AggFunc, t algebra.Type) {
	r.at(pos, "%s averages numbers or durations, not %s values", fn, t)
}

func (r *report) aggNoParam(pos source.Pos, fn expr.AggFunc) {
	r.at(pos, "%s takes one argument (only percentile and histogram take a second)", fn)
}

func (r *report) aggNeedsParam(pos source.Pos, fn expr.AggFunc) {
	if fn == expr.AggPercentile {
		r.at(pos, "percentile needs the percentile as its second argument, e.g. percentile(x, 95)")
		return
	}
	r.at(pos, "histogram needs the bucket width as its second argument, e.g. histogram(x, 10) or histogram(d, 1ms)")
}

func (r *report) aggParamConst(pos source.Pos, fn expr.AggFunc) {
	r.at(pos, "%s's second argument must be a constant number or duration", fn)
}

func (r *report) percentileRange(pos source.Pos, p string) {
	r.at(pos, "a percentile is a number from 0 to 100, not %s", p)
}

func (r *report) histogramWidthType(pos source.Pos, w string, t algebra.Type) {
	if t.Kind == algebra.KindDuration {
		r.at(pos, "a histogram of durations needs a duration as its bucket width (e.g. 1ms), not %s", w)
		return
	}
	r.at(pos, "a histogram of %s values needs a number as its bucket width, not %s", t, w)
}

func (r *report) histogramWidth(pos source.Pos, w string) {
	r.at(pos, "a histogram's bucket width must be greater than 0, not %s", w)
}

func (r *report) minMaxType(pos source.Pos, fn expr.AggFunc, t algebra.Type) {
	r.at(pos, "%s needs ordered values, but %s values are not ordered", fn, t)
}

// article prefixes a type or relation name with "a" or "an".
func article(s string) string {
	if s != "" && strings.ContainsRune("aeiouAEIOU", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}
