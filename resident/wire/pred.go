package wire

import "fmt"

// What the residents (the Go resident's fragments, the kernel resident's
// selections compiled into eBPF) share about predicates.

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
