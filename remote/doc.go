// Package remote is the remote monitor's live side: RunLive runs a
// compiled program (package query) against resident monitors — it checks
// their hellos, tells them what the α operators need enabled (whole
// types, constants, triggers for the rewriter's join restrictions),
// renews their lease, merges their packet streams by watermark into the
// interpreter's live network and streams each result element as it is
// produced. CheckHellos is the check every dial of residents makes.
//
// Every answer is about what was observed (observe.go): an Observation
// per primitive relation says from when it was watched (the residents
// report when they carried out the run's commands), to when, where
// packets were lost and at which period a sampled relation was sampled;
// inputs are restricted to it (Restrict is the same rule on a history),
// losses are reported as they happen, and a lost session ends the run
// with an ErrIncomplete. Inside a gap nothing is known of its relation:
// inputs are cut at gaps and answers cut out of them (the rule at gaps,
// RestrictObserved on a history), and the observation is queryable as the
// built-in relations Observed and Lost, fed to the network (and the Tap)
// as the run learns them.
//
// A fleet — hosts reached over NATS, or several residents — is one
// subject of many hosts (fleet.go): FleetCatalog makes its catalog the
// union of the hosts' descriptions, with a Host attribute on every
// relation and host-qualified identifiers; each host's watermark is held
// back by its clock-skew bound, and a silent host is lost alone. What a
// resident runs for a plan beyond enables — σ/π fragments (fragment.go)
// and two-phase counting triggers (twophase.go) — is sent only to
// residents announcing the capability; the monitor applies every
// selection again, so results never depend on them. A program with a
// join or an aggregate over one resident's data runs whole at that
// resident (fragment_plan.go: rewrite.PlaceProgram, CPlan, RunFragment —
// this package's own RunLive, run there), which sends derived tuples.
package remote
