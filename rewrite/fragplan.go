package rewrite

import (
	"fmt"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/plan"
)

// ProgramPlacement is where a program's final plans run (PlaceProgram):
// at the resident whose data they read (Resident; the resident compiles
// the program's text again and sends its results as derived tuples), or
// at the monitor, with Why saying what kept them there.
type ProgramPlacement struct {
	Resident bool
	// Why says why the plans stay at the monitor ("" when they do not).
	Why string
	// Ops is what the resident would run that a σ/π fragment cannot:
	// its joins (blocks of two or more range variables) and aggregates.
	Joins, Aggregates int
	// PerHost, in a fleet, says the plans run whole at each host and the
	// monitor's answer is the union of the hosts' (PlacePerHost).
	PerHost bool
	// Costly: the rule "resident plans" would place the program, the
	// rule "placement cost" (placecost.go) keeps it at the monitor;
	// Estimate is that rule's estimate, either way ("" when not asked).
	Costly   bool
	Estimate string
	// PerPacket counts, by relation, the statements the estimate says
	// send a result per packet of its α (nil when not asked).
	PerPacket map[string]int
}

// String says it as --explain prints it.
func (p ProgramPlacement) String() string {
	if !p.Resident {
		return "at the monitor: " + p.Why
	}
	est := ""
	if p.Estimate != "" {
		est = " (estimate: " + p.Estimate + ")"
	}
	var what []string
	if p.Joins > 0 {
		what = append(what, fmt.Sprintf("%d join(s)", p.Joins))
	}
	if p.Aggregates > 0 {
		what = append(what, fmt.Sprintf("%d aggregate(s)", p.Aggregates))
	}
	if p.PerHost {
		return "every operator at each host (" + strings.Join(what, ", ") + "); the monitor receives each host's derived tuples, their union its answer" + est
	}
	return "every operator at the resident (" + strings.Join(what, ", ") + "); the monitor receives derived tuples" + est
}

// PlaceProgram decides the plan fragment of the rule "resident plans"
// (the paper's horizontal fragmentation, EndoScope's placement, at the
// boundary of one resident's data): a program whose plans read only
// what one resident reports — α operators over its sensed relations,
// its primitive entity relations, the Clock, constants and relations the
// program itself derives — depends on that resident's data alone, so the
// resident can run all of it, joins and aggregates included, and send the
// results instead of the packets.
//
// Why it is exact. A live answer is a function of the packets the
// resident's sessions deliver, of the entity tuples it reports and of the
// observation (from when the commands were carried out, where packets
// were lost). A plan fragment runs the monitor's own code (the same
// compiler, rewriter and network, remote.RunLive) over a session of the
// resident opened in its process: it receives what a monitor's session
// would, its observation is its own and its answers are cut at its own
// gaps. Its result elements are therefore the answer a monitor would
// compute over an observation starting when the fragment started; the
// monitor takes them as its answer, with the fragment's observation as
// its own (PResultStart, PResultLoss). A fragment stopped by its bounds
// says where (PResultLost): the answer is then incomplete from there, as
// for a lost session, and right before it.
//
// What is left at the monitor: any plan that reads the observation's own
// relations (Observed, Lost: the monitor's observation, not the
// resident's), a fleet's plans unless each host can run them whole
// (PlacePerHost, the rule "per-host plans"), and — because a
// σ/π fragment (Place) already spares every packet such a plan can spare —
// plans without a join or an aggregate.
func PlaceProgram(cat *algebra.Catalog, roots ...plan.Node) ProgramPlacement {
	var p ProgramPlacement
	if cat.Fleet {
		p = PlacePerHost(cat, roots...)
	} else {
		p = placeOne(roots)
	}
	if p.Resident {
		// Only a program that can be placed is weighed: the rule
		// "placement cost" decides whether placing it pays.
		p = costPlacement(p, roots)
	}
	return p
}

// placeOne is PlaceProgram for one resident's data.
func placeOne(roots []plan.Node) ProgramPlacement {
	var p ProgramPlacement
	why := ""
	for _, root := range roots {
		plan.Walk(root, func(n plan.Node) {
			switch x := n.(type) {
			case *plan.Scan:
				if algebra.IsObservation(x.Rel.Name) && why == "" {
					why = "it reads " + x.Rel.Name + ", the monitor's observation"
				}
			case *plan.Aggregate:
				p.Aggregates++
			}
			if b, ok := decompose(n); ok && len(b.leaves) >= 2 {
				p.Joins++
			}
		})
	}
	switch {
	case why != "":
		p.Why = why
	case p.Joins == 0 && p.Aggregates == 0:
		p.Why = "no join or aggregate (σ/π fragments spare its packets)"
	default:
		p.Resident = true
	}
	return p
}

// PlacedTree draws a final plan (plan.Tree) with where each operator
// runs: every one at the resident when the program is placed there (p),
// otherwise at the monitor, but for the α operators, whose sensors the
// residents run (with the σ/π fragments Place decides: the monitor
// applies those again).
func PlacedTree(p ProgramPlacement, root plan.Node) string {
	var b strings.Builder
	lines := strings.Split(strings.TrimSuffix(plan.Tree(root), "\n"), "\n")
	at := "resident"
	if p.PerHost {
		at = "per host" // at each host, its own part
	}
	for _, l := range lines {
		where := "monitor "
		switch {
		case p.Resident:
			where = at
		case strings.Contains(l, "α["):
			where = "resident"
		}
		fmt.Fprintf(&b, "%s │ %s\n", where, l)
	}
	switch {
	case p.Resident && p.PerHost:
		b.WriteString("monitor  │ the union of the hosts' results, as derived tuples\n")
	case p.Resident:
		b.WriteString("monitor  │ the results, as derived tuples\n")
	}
	return b.String()
}
