package rewrite

import (
	"fmt"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/plan"
)

// Class is a rule class; classes apply in this order.
type Class uint8

const (
	Traditional Class = iota
	AlphaRules
	EntitySources
	ClockRules
	Variants
	// Scans: rules for plans over stored relations (the Stored set).
	Scans
	numClasses
)

func (c Class) String() string {
	switch c {
	case Traditional:
		return "traditional"
	case AlphaRules:
		return "alpha"
	case EntitySources:
		return "entity-source"
	case ClockRules:
		return "clock"
	case Variants:
		return "variant"
	case Scans:
		return "scan"
	}
	return "?"
}

// Set is the rule sets a rule belongs to, one bit each.
type Set uint8

const (
	// Live is the rule set of Rewrite: plans whose sensed relations are α
	// operators, run acquisitionally (live residents, or a history as they
	// would see it).
	Live Set = 1 << iota
	// Stored is the rule set of RewriteStored: plans over stored relations
	// (a database, a history), without α operators.
	Stored
)

// Rule is one transformation. It matches one operator: its function sees
// only nodes of that type (see on) and returns the replacement, or nil
// when the rule does not apply there. Doc states the rule and why it
// preserves results exactly; Sets are the rule sets it belongs to.
type Rule struct {
	Name  string
	Class Class
	Sets  Set
	Doc   string
	apply func(c *Context, n plan.Node) plan.Node
}

// on binds a rule's function to the operator it matches, the type T of its
// node: the rule applies at nodes of type T only, and fn receives them
// typed.
func on[T plan.Node](fn func(c *Context, n T) plan.Node) func(*Context, plan.Node) plan.Node {
	return func(c *Context, n plan.Node) plan.Node {
		if t, ok := n.(T); ok {
			return fn(c, t)
		}
		return nil
	}
}

// table is every rule, in class order, each with the sets it belongs to:
// the one list Rules and StoredRules select from. Within a class, the
// order is the order rules are tried in.
func table() []Rule {
	return slices.Concat(traditionalRules(), aggregateRules(), alphaRules(), entitySourceRules(),
		clockRules(), variantRules(), scanRules())
}

// rulesIn returns the rules of a set, in table order.
func rulesIn(s Set) []Rule {
	var out []Rule
	for _, r := range table() {
		if r.Sets&s != 0 {
			out = append(out, r)
		}
	}
	return out
}

// Rules returns the rules of the Live set, in class order, as data.
func Rules() []Rule { return rulesIn(Live) }

// StoredRules returns the rules of the Stored set, as data: the
// traditional class (selections pushed to their scans, products with
// equalities made joins — exact for any plan) and the scan class. The α
// and entity-source classes have nothing to act on without α operators.
func StoredRules() []Rule { return rulesIn(Stored) }

// Context is what rules may consult.
type Context struct {
	Catalog *algebra.Catalog
}

// Step is one rule application.
type Step struct {
	Rule   string
	Class  Class
	Before plan.Node // the whole plan before
	After  plan.Node // the whole plan after
}

// Result is a rewrite: the plan it started from, the plan it ended with
// and every step between.
type Result struct {
	Initial plan.Node
	Final   plan.Node
	Steps   []Step
}

// maxSteps bounds a rewrite; reaching it means a rule set that cycles.
const maxSteps = 1000

// Rewrite applies the Live rules to a plan until none changes it.
func Rewrite(c *Context, root plan.Node) (Result, error) {
	return rewriteWith(c, root, Rules())
}

// RewriteStored applies the Stored rules to a plan (plan.Translate's,
// without α operators) that runs over stored relations.
func RewriteStored(c *Context, root plan.Node) (Result, error) {
	return rewriteWith(c, root, StoredRules())
}

// rewriteWith applies rules class by class, each class until none of its
// rules changes the plan, and the whole sequence again until a round
// changes nothing.
func rewriteWith(c *Context, root plan.Node, rules []Rule) (Result, error) {
	res := Result{Initial: root}
	var byClass [numClasses][]*Rule
	for i := range rules {
		r := &rules[i]
		byClass[r.Class] = append(byClass[r.Class], r)
	}
	cur := root
	for {
		roundStart := cur
		for cl, rules := range byClass {
			for {
				next, rule := applyOne(c, cur, rules)
				if rule == nil {
					break
				}
				res.Steps = append(res.Steps, Step{Rule: rule.Name, Class: Class(cl), Before: cur, After: next})
				cur = next
				if len(res.Steps) > maxSteps {
					return res, fmt.Errorf("rewrite: no fixpoint after %d steps (last rule %s)", maxSteps, rule.Name)
				}
			}
		}
		if plan.Equal(cur, roundStart) {
			break
		}
	}
	res.Final = cur
	return res, nil
}

// applyOne finds the first rule, in order, that changes the plan at some
// node (visited top-down), and returns the plan it makes.
func applyOne(c *Context, root plan.Node, rules []*Rule) (plan.Node, *Rule) {
	for _, r := range rules {
		if next, ok := applyAt(c, root, r); ok {
			return next, r
		}
	}
	return root, nil
}

// applyAt applies r at the first node (pre-order) where it yields a
// different subtree.
func applyAt(c *Context, n plan.Node, r *Rule) (plan.Node, bool) {
	if out := r.apply(c, n); out != nil && !plan.Equal(out, n) {
		return out, true
	}
	kids := n.Children()
	for i, k := range kids {
		if nk, ok := applyAt(c, k, r); ok {
			newKids := append([]plan.Node(nil), kids...)
			newKids[i] = nk
			return plan.WithChildren(n, newKids), true
		}
	}
	return n, false
}
