package exec_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/internal/testkit"
)

// TestColumnarJoinDifferential holds the columnar overlap equi-join
// (columnar_join.go) to the reference evaluator: random joins of two
// interval relations (self-joins included) on equal columns of one type
// (none, one or two equalities), random conjuncts over either variable,
// random targets from both, sometimes an explicit overlap when clause, and
// now and then a shape the path leaves to the row operators (a conjunct or
// target over both variables, another when clause), over random histories
// with and without the ends of time. It fails if the path is taken too
// rarely to be tested.
func TestColumnarJoinDifferential(t *testing.T) {
	root := testkit.Root(t)
	cat := testkit.LoadCatalog(t, filepath.Join(root, "testdata/differential/spec.sdl"))
	r := rand.New(rand.NewPCG(16, 3))
	var queries []string
	for range 200 {
		queries = append(queries, randomOverlapJoin(r))
	}
	taken, stmtsRun := columnarDifferential(t, cat, queries)
	t.Logf("columnar join path taken by %d of %d statement runs", taken, stmtsRun)
	if taken < stmtsRun/2 {
		t.Errorf("the columnar path ran %d of %d join statements: too few to test it", taken, stmtsRun)
	}
}

// randomOverlapJoin is a random retrieve over two interval relations of
// the differential schema.
func randomOverlapJoin(r *rand.Rand) string {
	type attr struct{ name, typ string }
	rels := []struct {
		name  string
		attrs []attr
	}{
		{"Process", []attr{{"Process", "Process"}, {"State", "State"}, {"Prio", "int"}}},
		{"RunningOn", []attr{{"Process", "Process"}, {"Cpu", "Cpu"}}},
		{"Waiting", []attr{{"Process", "Process"}, {"Mailbox", "Mailbox"}}},
		{"Cpu", []attr{{"Cpu", "Cpu"}}},
		{"Mailbox", []attr{{"Mailbox", "Mailbox"}}},
	}
	consts := map[string][]string{
		"Process": {`"P1"`, `"P2"`, `"P3"`}, "Cpu": {`"C1"`, `"C2"`}, "Mailbox": {`"M1"`, `"M2"`},
		"State": {`"Running"`, `"Ready"`, `"Done"`},
	}
	a, b := rels[r.IntN(len(rels))], rels[r.IntN(len(rels))]
	vars := [2]string{"a", "b"}
	sides := [2][]attr{a.attrs, b.attrs}
	col := func(v int, at attr) string { return vars[v] + "." + at.name }
	var conds []string
	var pairs [][2]attr
	for _, x := range a.attrs {
		for _, y := range b.attrs {
			if x.typ == y.typ {
				pairs = append(pairs, [2]attr{x, y})
			}
		}
	}
	if len(pairs) > 0 && r.IntN(6) != 0 {
		for range 1 + r.IntN(2) {
			p := pairs[r.IntN(len(pairs))]
			conds = append(conds, col(0, p[0])+" = "+col(1, p[1]))
		}
	}
	atom := func(v int) string {
		at := sides[v][r.IntN(len(sides[v]))]
		if at.typ == "int" {
			ops := []string{"<", "<=", ">", ">=", "=", "!="}
			return fmt.Sprintf("%s %s %d", col(v, at), ops[r.IntN(len(ops))], r.IntN(5)-1)
		}
		op := "="
		if r.IntN(3) == 0 {
			op = "!="
		}
		cs := consts[at.typ]
		return col(v, at) + " " + op + " " + cs[r.IntN(len(cs))]
	}
	for range r.IntN(3) {
		c := atom(r.IntN(2))
		if r.IntN(5) == 0 {
			c = "(" + c + " or " + atom(r.IntN(2)) + ")" // over both when the sides differ
		}
		conds = append(conds, c)
	}
	if len(pairs) > 0 && r.IntN(10) == 0 {
		p := pairs[r.IntN(len(pairs))]
		conds = append(conds, col(0, p[0])+" != "+col(1, p[1])) // over both: rows
	}
	var targets []string
	for k := range 1 + r.IntN(3) {
		v := r.IntN(2)
		at := sides[v][r.IntN(len(sides[v]))]
		e := col(v, at)
		switch {
		case at.typ == "int" && r.IntN(3) == 0:
			e += " * 2"
		case r.IntN(12) == 0:
			e = "3"
		}
		targets = append(targets, fmt.Sprintf("T%d = %s", k, e))
	}
	if a.name == "Process" && b.name == "Process" && r.IntN(8) == 0 {
		targets = append(targets, "S = a.Prio + b.Prio") // over both: rows
	}
	q := fmt.Sprintf("range of a is %s\nrange of b is %s\nretrieve (%s)", a.name, b.name, strings.Join(targets, ", "))
	switch r.IntN(8) {
	case 0:
		q += " when a overlap b"
	case 1:
		q += " when b overlap a"
	case 2:
		q += " when a precede b" // another when clause: rows
	}
	if len(conds) > 0 {
		q += " where " + strings.Join(conds, " and ")
	}
	return q
}

// TestColumnarJoinShapes: the join shapes the columnar path takes and
// those it leaves to the row operators, each giving the reference's
// result.
func TestColumnarJoinShapes(t *testing.T) {
	checkShapes(t, []colShape{
		{q: `range of p is Process range of r is RunningOn retrieve (p.Process, r.Cpu) where p.Process = r.Process`, took: []bool{true}},
		{q: `range of p is Process range of r is RunningOn retrieve (p.Process, r.Cpu) where p.Process = r.Process and p.State = "Running"`, took: []bool{true}},
		// No equality: one key; a self-join; two equalities; an
		// explicit overlap.
		{q: `range of c is Cpu range of m is Mailbox retrieve (c.Cpu, m.Mailbox)`, took: []bool{true}},
		{q: `range of p is Process range of q is Process retrieve (p.Process, X = q.Prio) where p.State = q.State and q.Prio > 1`, took: []bool{true}},
		{q: `range of r is RunningOn range of s is RunningOn retrieve (r.Process, s.Cpu) where r.Process = s.Process and r.Cpu = s.Cpu when r overlap s`, took: []bool{true}},
		// Rows: a conjunct or a target over both variables, another
		// when or valid clause, an event relation, a derived input,
		// the generic join (Options.generalJoin is internal: gaps).
		{q: `range of p is Process range of q is Process retrieve (p.Process) where p.Prio < q.Prio`, took: []bool{false}},
		{q: `range of p is Process range of q is Process retrieve (S = p.Prio + q.Prio) where p.Process = q.Process`, took: []bool{false}},
		{q: `range of p is Process range of r is RunningOn retrieve (p.Process, r.Cpu) where p.Process = r.Process when p precede r`, took: []bool{false}},
		{q: `range of p is Process range of r is RunningOn retrieve (p.Process, r.Cpu) valid from begin of p to end of r where p.Process = r.Process`, took: []bool{false}},
		{q: `range of s is SendMessage range of r is RunningOn retrieve (s.Mailbox, r.Cpu) where s.Process = r.Process`, took: []bool{false}},
		{q: `range of p is Process retrieve into R (p.Process) where p.Prio > 1
range of x is R range of r is RunningOn retrieve (r.Cpu) where x.Process = r.Process`, took: []bool{false, false}},
		{q: `range of p is Process range of r is RunningOn retrieve (p.Process, r.Cpu) where p.Process = r.Process`, took: []bool{false}, opts: exec.Options{NoColumnar: true}},
		// An arithmetic error abandons the path: the row operators
		// report it.
		{q: `range of p is Process range of r is RunningOn retrieve (p.Process, X = p.Prio / (p.Prio - p.Prio)) where p.Process = r.Process`, took: []bool{false}},
	})
}

// TestColumnarJoinHashedKeys: join columns whose codes span more than a
// dense array may number are numbered by hash, as are result groups past
// the dense bound; the result is the reference's.
func TestColumnarJoinHashedKeys(t *testing.T) {
	root := testkit.Root(t)
	cat := testkit.LoadCatalog(t, filepath.Join(root, "testdata/differential/spec.sdl"))
	for seed := range uint64(8) {
		h := histgen.Random(cat, histgen.DefaultConfig(seed))
		tab := h.Table("Process")
		for i := range tab.Rows {
			if i%2 == 0 {
				tab.Rows[i].Vals[2] = algebra.Int(tab.Rows[i].Vals[2].N << 40) // far apart
			}
		}
		tab.Add(tab.Rows[0].Vals, tab.Rows[0].From, tab.Rows[0].To) // rebuilds the columns
		q := `range of p is Process range of q is Process retrieve (p.Process, X = q.Prio) where p.Prio = q.Prio and p.Process != "P1"`
		stmts := testkit.Compile(t, cat, "q", q, 0)
		want, werr := ref.Eval(h, stmts)
		got, took, err := columnarRun(t, h, stmts, exec.Options{})
		if werr != nil || err != nil {
			t.Fatalf("seed %d: reference %v, interpreter %v", seed, werr, err)
		}
		if !took[0] || render(got[0]) != render(want[0]) {
			t.Fatalf("seed %d: columnar %v\n--- interpreter\n%s--- reference\n%s", seed, took[0], render(got[0]), render(want[0]))
		}
	}
}

// TestColumnarJoinBudget: the columnar join checks the memory budget as
// it binds, as the Join does: a run whose heap is over it stops with a
// *MemoryError.
func TestColumnarJoinBudget(t *testing.T) {
	h := benchHistory(t, 200, 20)
	stmts := testkit.Compile(t, h.Catalog, "q", benchTemporalJoin, 0)
	b := &exec.Budget{Limit: 1 << 20}
	b.Over(1 << 30)
	net, err := exec.Build(h.Catalog, stmts, []plan.Node{plan.Translate(stmts[0])}, exec.Options{Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	err = net.RunHistory(h)
	var me *exec.MemoryError
	if !errors.As(err, &me) {
		t.Fatalf("RunHistory over the budget: %v, want a *MemoryError", err)
	}
	// Stopped as it bound, not once all was bound and collected.
	if s := net.Stmts[0]; s.Columnar || s.Result.Count != 0 {
		t.Errorf("over the budget: columnar %v, %d results collected", s.Columnar, s.Result.Count)
	}
	// Within it: the columnar path, the reference's result.
	got, took, err := columnarRun(t, h, stmts, exec.Options{Budget: &exec.Budget{Limit: 1 << 40}})
	want, werr := ref.Eval(h, stmts)
	if err != nil || werr != nil || !took[0] || render(got[0]) != render(want[0]) {
		t.Fatalf("within the budget: columnar %v, errors %v, %v, or the result differs", took, err, werr)
	}
}
