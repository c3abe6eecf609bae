package rewrite

import (
	"fmt"

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
	// Scans: rules for plans over stored relations (RewriteStored), not
	// part of Rules.
	Scans
)

var classNames = [...]string{"traditional", "alpha", "entity-source", "clock", "variant", "scan"}

func (c Class) String() string { return classNames[c] }

// Classes lists the classes in application order.
var Classes = []Class{Traditional, AlphaRules, EntitySources, ClockRules, Variants, Scans}

// Rule is one transformation. Apply looks at one node and returns its
// replacement, or nil when the rule does not apply there. Doc states the
// rule and why it preserves results exactly.
type Rule struct {
	Name  string
	Class Class
	Doc   string
	Apply func(c *Context, n plan.Node) plan.Node
}

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

// Rules returns every rule, in class order, as data.
func Rules() []Rule {
	var all []Rule
	all = append(all, traditionalRules()...)
	all = append(all, aggregateRules()...)
	all = append(all, alphaRules()...)
	all = append(all, entitySourceRules()...)
	all = append(all, clockRules()...)
	all = append(all, variantRules()...)
	return all
}

// Rewrite applies the rules to a plan until none changes it.
func Rewrite(c *Context, root plan.Node) (Result, error) {
	return rewriteWith(c, root, Rules())
}

func rewriteWith(c *Context, root plan.Node, rules []Rule) (Result, error) {
	res := Result{Initial: root}
	byClass := map[Class][]Rule{}
	for _, r := range rules {
		byClass[r.Class] = append(byClass[r.Class], r)
	}
	cur := root
	for {
		roundStart := plan.String(cur)
		for _, cl := range Classes {
			for {
				next, rule := applyOne(c, cur, byClass[cl])
				if rule == nil {
					break
				}
				res.Steps = append(res.Steps, Step{Rule: rule.Name, Class: cl, Before: cur, After: next})
				cur = next
				if len(res.Steps) > maxSteps {
					return res, fmt.Errorf("rewrite: no fixpoint after %d steps (last rule %s)", maxSteps, rule.Name)
				}
			}
		}
		if plan.String(cur) == roundStart {
			break
		}
	}
	res.Final = cur
	return res, nil
}

// applyOne finds the first rule, in order, that changes the plan at some
// node (visited top-down), and returns the plan it makes.
func applyOne(c *Context, root plan.Node, rules []Rule) (plan.Node, *Rule) {
	before := plan.String(root)
	for i := range rules {
		r := &rules[i]
		if next, ok := applyAt(c, root, r); ok {
			if plan.String(next) != before {
				return next, r
			}
		}
	}
	return root, nil
}

// applyAt applies r at the first node (pre-order) where it yields a
// different subtree.
func applyAt(c *Context, n plan.Node, r *Rule) (plan.Node, bool) {
	if out := r.Apply(c, n); out != nil && plan.String(out) != plan.String(n) {
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
