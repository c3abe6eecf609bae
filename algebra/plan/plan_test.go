package plan_test

import (
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/internal/testkit"
)

func translate(t *testing.T, query string) []plan.Node {
	t.Helper()
	return translateIn(t, testkit.PaperCatalog(t), query)
}

// translateIn translates the retrieves of a query over a catalog.
func translateIn(t *testing.T, cat *algebra.Catalog, query string) []plan.Node {
	t.Helper()
	stmts := testkit.Compile(t, cat, "q", query, 0)
	var out []plan.Node
	for _, s := range stmts {
		out = append(out, plan.Translate(s))
	}
	return out
}

const resumedByP1 = `range of S is SendMessage
range of W is Waiting
retrieve ResumedbyP1 (Process = W.Process)
valid at end of W
where S.Mailbox = W.Mailbox and S.Process = "P1"
when S precede end of W`

func TestTranslatePaperQuery(t *testing.T) {
	p := translate(t, resumedByP1)[0]
	wantLine := `π[Process = W.Process](πT[at end of W](σT[S precede end of W](σ[S.Mailbox = W.Mailbox and S.Process = "P1"](SendMessage S × Waiting W))))`
	if got := plan.String(p); got != wantLine {
		t.Errorf("one line:\n got %s\nwant %s", got, wantLine)
	}
	wantTree := `π[Process = W.Process]
└── πT[at end of W]
    └── σT[S precede end of W]
        └── σ[S.Mailbox = W.Mailbox and S.Process = "P1"]
            └── ×
                ├── SendMessage S
                └── Waiting W
`
	if got := plan.Tree(p); got != wantTree {
		t.Errorf("tree:\n%s\nwant:\n%s", got, wantTree)
	}
}

func TestTranslateDefaults(t *testing.T) {
	cases := []struct{ q, want string }{
		// One interval variable: no σT, valid from begin to end of it.
		{`range of p is Process retrieve (p.State)`,
			`π[State = p.State](πT[from begin of p to end of p](Process p))`},
		// Two interval variables: σT of the overlap, valid over the intersection.
		{`range of p is Process range of r is RunningOn retrieve (p.Process, r.Processor) where p.Process = r.Process`,
			`π[Process = p.Process, Processor = r.Processor](πT[from begin of (p overlap r) to end of (p overlap r)](σT[p overlap r](σ[p.Process = r.Process](Process p × RunningOn r))))`},
		// An event variable makes the default valid clause an event.
		{`range of s is SendMessage range of w is Waiting retrieve (s.Process) where s.Mailbox = w.Mailbox`,
			`π[Process = s.Process](πT[at begin of (s overlap w)](σT[s overlap w](σ[s.Mailbox = w.Mailbox](SendMessage s × Waiting w))))`},
		// Three variables: the overlap chains left to right. (Variables a
		// retrieve does not mention are not part of it.)
		{`range of p is Process range of r is RunningOn range of w is Waiting retrieve (p.Process, r.Processor, w.Mailbox)`,
			`π[Process = p.Process, Processor = r.Processor, Mailbox = w.Mailbox](πT[from begin of (p overlap r overlap w) to end of (p overlap r overlap w)](σT[p overlap r overlap w](Process p × RunningOn r × Waiting w)))`},
		// No variables: the unit relation, valid over all time.
		{`retrieve (X = 1)`,
			`π[X = 1](πT[from begin of ("beginning" extend "forever") to end of ("beginning" extend "forever")](unit))`},
		// Clock[n].
		{`range of c is Clock[10] range of r is RunningOn retrieve (r.Processor) valid at begin of c when c overlap r`,
			`π[Processor = r.Processor](πT[at begin of c](σT[c overlap r](Clock[10] c × RunningOn r)))`},
	}
	for _, c := range cases {
		if got := plan.String(translate(t, c.q)[0]); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.q, got, c.want)
		}
	}
}

func TestTranslateDerived(t *testing.T) {
	ps := translate(t, `range of w is Waiting
retrieve into Unblocked (P = w.Process) valid at end of w
range of u is Unblocked
retrieve (u.P)`)
	if got, want := plan.String(ps[1]), `π[P = u.P](πT[at begin of u](Unblocked u))`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}
