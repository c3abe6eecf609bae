// Package rewrite will own the rule-based rewriter: rule classes
// (traditional, α, entity source, clock, operator variants), the fixpoint
// driver, the explain trace and the cost estimate. Plans it rewrites are
// algebra/plan nodes; every rule must preserve results exactly. Nothing is
// implemented here yet: plans currently run as translated.
package rewrite
