package wire

import (
	"cmp"
	"fmt"
	"math"
	"strings"
)

// What the residents (the Go resident's fragments, the kernel resident's
// selections compiled into eBPF) share about predicates.

// Eval reports whether a tuple satisfies p, which Check accepted for the
// tuple's attributes: val(a) returns attribute a's value — its number (a
// float's bits) for every kind but strings and entities, its string for a
// string, its ID for an entity — or false when the tuple lacks it (a
// comparison of an attribute absent is false, whatever its operator).
// Numbers compare as the wire says (PEq):
// VInt, VTime and VDuration signed, VFloat as floats (NaN unordered and
// unequal to everything), VBool and VEnum unsigned; strings and IDs
// bytewise. The one evaluator of predicates at the residents: the Go
// resident's producers and drain (resident's fragments) and the kernel
// resident's drain (resident/kernel's sieve) — each sends a session only
// what its own predicate passes, and the remote monitor evaluates the same
// selection again, so they must agree with it on every value.
func (p *Pred) Eval(val func(a int) (uint64, string, bool)) bool {
	switch p.Op {
	case PAnd:
		for i := range p.Kids {
			if !p.Kids[i].Eval(val) {
				return false
			}
		}
		return true
	case POr:
		for i := range p.Kids {
			if p.Kids[i].Eval(val) {
				return true
			}
		}
		return false
	case PNot:
		return !p.Kids[0].Eval(val)
	}
	n, s, ok := val(int(p.Attr))
	if !ok {
		return false
	}
	var c int
	switch p.Value.Kind {
	case VEntity, VString:
		if p.Op == PPrefix {
			return strings.HasPrefix(s, p.Value.S)
		}
		c = strings.Compare(s, p.Value.S)
	case VInt, VTime, VDuration:
		c = cmp.Compare(int64(n), int64(p.Value.N))
	case VFloat:
		a, b := math.Float64frombits(n), math.Float64frombits(p.Value.N)
		if a != a || b != b { // NaN: unordered, unequal to everything
			return p.Op == PNe
		}
		c = cmp.Compare(a, b)
	default:
		c = cmp.Compare(n, p.Value.N)
	}
	switch p.Op {
	case PEq:
		return c == 0
	case PNe:
		return c != 0
	case PLt:
		return c < 0
	case PLe:
		return c <= 0
	case PGt:
		return c > 0
	case PGe:
		return c >= 0
	}
	return false
}

// Check checks p against a sensor's attributes (their names and kinds;
// rel names the sensor in errors): operators and their operands, the
// attributes compared, the constants' kinds, prefix only of strings and
// entities, and the bounds MaxPredNodes and MaxPredDepth (which decoding
// checks too, but an in-process command was not decoded). It returns the
// comparisons in p.
func (p *Pred) Check(rel string, names []string, kinds []ValueKind) (cmps int, err error) {
	nodes := 0
	return p.check(rel, names, kinds, 1, &nodes)
}

func (p *Pred) check(rel string, names []string, kinds []ValueKind, depth int, nodes *int) (cmps int, err error) {
	if *nodes++; *nodes > MaxPredNodes {
		return 0, fmt.Errorf("more than %d predicate nodes (wire.MaxPredNodes)", MaxPredNodes)
	}
	if depth > MaxPredDepth {
		return 0, fmt.Errorf("predicate nested more than %d deep (wire.MaxPredDepth)", MaxPredDepth)
	}
	switch p.Op {
	case PAnd, POr, PNot:
		if len(p.Kids) == 0 || p.Op == PNot && len(p.Kids) != 1 {
			return 0, fmt.Errorf("%v with %d operands", p.Op, len(p.Kids))
		}
		for i := range p.Kids {
			n, err := p.Kids[i].check(rel, names, kinds, depth+1, nodes)
			if err != nil {
				return 0, err
			}
			cmps += n
		}
		return cmps, nil
	case PEq, PNe, PLt, PLe, PGt, PGe, PPrefix:
	default:
		return 0, fmt.Errorf("unknown predicate operator %d", p.Op)
	}
	if int(p.Attr) >= len(kinds) {
		return 0, fmt.Errorf("%s has no attribute %d", rel, p.Attr)
	}
	k := kinds[p.Attr]
	if k != p.Value.Kind {
		return 0, fmt.Errorf("%s.%s is a %v, the constant a %v", rel, names[p.Attr], k, p.Value.Kind)
	}
	if p.Op == PPrefix && k != VString && k != VEntity {
		return 0, fmt.Errorf("prefix of %s.%s, a %v", rel, names[p.Attr], k)
	}
	return 1, nil
}

// Key appends a canonical key of p to b (equal keys: equal predicates).
func (p *Pred) Key(b []byte) []byte {
	b = append(b, byte(p.Op))
	switch p.Op {
	case PAnd, POr, PNot:
		b = fmt.Appendf(b, "%d(", len(p.Kids))
		for i := range p.Kids {
			b = p.Kids[i].Key(b)
		}
		return append(b, ')')
	}
	return fmt.Appendf(b, "%d:%d:%d:%q", p.Attr, p.Value.Kind, p.Value.N, p.Value.S)
}

// Cmps returns the comparisons in p.
func (p *Pred) Cmps() int {
	if len(p.Kids) == 0 {
		return 1
	}
	n := 0
	for i := range p.Kids {
		n += p.Kids[i].Cmps()
	}
	return n
}

// Clone returns a deep copy of p (nil for nil).
func (p *Pred) Clone() *Pred {
	if p == nil {
		return nil
	}
	c := *p
	if len(p.Kids) > 0 {
		c.Kids = make([]Pred, len(p.Kids))
		for i := range p.Kids {
			c.Kids[i] = *p.Kids[i].Clone()
		}
	}
	return &c
}
