package exec_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
)

// columnarRun runs stmts over h through RunHistory, with or without the
// columnar path, and says which statements took it.
func columnarRun(t testing.TB, h *algebra.History, stmts []*check.Retrieve, opts exec.Options) ([]*algebra.Table, []bool, error) {
	t.Helper()
	tables, net, err := interpret(h.Catalog, h, stmts, opts)
	var took []bool
	if net != nil {
		for _, s := range net.Stmts {
			took = append(took, s.Columnar)
		}
	}
	return tables, took, err
}

// TestColumnarDifferential holds the columnar path to the reference
// evaluator over the differential corpus and random σ/π queries (random
// conjunctions of comparisons, boolean and arithmetic expressions over
// every kind of attribute, random targets) on random histories, the ends
// of time included; a query the path does not take, or abandons at an
// arithmetic error, is held to the reference all the same. It fails if
// the path is taken too rarely to be tested.
func TestColumnarDifferential(t *testing.T) {
	root := testkit.Root(t)
	cat := testkit.LoadCatalog(t, filepath.Join(root, "testdata/differential/spec.sdl"))
	var queries []string
	for _, q := range testkit.ReadCorpus(t, filepath.Join(root, "testdata/differential/queries.tq")) {
		queries = append(queries, q.Text)
	}
	r := rand.New(rand.NewPCG(16, 2))
	for range 300 {
		queries = append(queries, randomSigmaPi(r))
	}
	taken, stmtsRun := columnarDifferential(t, cat, queries)
	t.Logf("columnar path taken by %d of %d statement runs", taken, stmtsRun)
	if taken < stmtsRun/3 {
		t.Errorf("the columnar path ran %d of %d statements: too few to test it", taken, stmtsRun)
	}
}

// columnarDifferential runs each query over random histories (every other
// query with the ends of time) through RunHistory and holds every
// statement to the reference evaluator; it returns how many statement
// runs took the columnar path, of how many.
func columnarDifferential(t *testing.T, cat *algebra.Catalog, queries []string) (taken, stmtsRun int) {
	t.Helper()
	n := max(4, testkit.Histories()/4)
	for qi, q := range queries {
		cfg := histgen.DefaultConfig(0)
		cfg.Edges = qi%2 == 0
		stmts := testkit.Compile(t, cat, fmt.Sprint("q", qi), q, cfg.Span)
		for seed := range n {
			cfg.Seed = uint64(seed)
			h := histgen.Random(cat, cfg)
			want, werr := ref.Eval(h, stmts)
			got, took, err := columnarRun(t, h, stmts, exec.Options{})
			if werr != nil || err != nil {
				if werr == nil || err == nil || werr.Error() != err.Error() {
					t.Fatalf("%s\nseed %d: reference fails with %v, interpreter with %v", q, seed, werr, err)
				}
				continue
			}
			for i := range want {
				stmtsRun++
				if took[i] {
					taken++
				}
				if g, w := render(got[i]), render(want[i]); g != w {
					t.Fatalf("%s\nseed %d, statement %d (columnar %v): interpreter and reference differ\n--- interpreter\n%s--- reference\n%s--- history\n%s",
						q, seed, i+1, took[i], g, w, dumpHistory(h))
				}
			}
		}
	}
	return taken, stmtsRun
}

// randomSigmaPi is a random retrieve over one variable of a relation with
// attributes of every kind the path reads.
func randomSigmaPi(r *rand.Rand) string {
	type rel struct {
		name, v string
		ints    []string
		others  []string            // comparable by = and != with a constant
		consts  map[string][]string // per other attribute
	}
	procs, cpus, mboxes := []string{`"P1"`, `"P2"`}, []string{`"C1"`, `"C2"`}, []string{`"M1"`, `"M2"`}
	rels := []rel{
		{"Process", "p", []string{"p.Prio"}, []string{"p.Process", "p.State"},
			map[string][]string{"p.Process": procs, "p.State": {`"Running"`, `"Done"`}}},
		{"SendMessage", "s", []string{"s.Size"}, []string{"s.Process", "s.Mailbox"},
			map[string][]string{"s.Process": procs, "s.Mailbox": mboxes}},
		{"Interrupt", "i", []string{"i.Level"}, []string{"i.Cpu"}, map[string][]string{"i.Cpu": cpus}},
		{"Note", "n", []string{"n.Weight"}, []string{"n.Text", "n.Urgent"},
			map[string][]string{"n.Text": {`"a"`, `"b"`, `""`}, "n.Urgent": {"true", "false"}}},
		{"RunningOn", "r", nil, []string{"r.Process", "r.Cpu"}, map[string][]string{"r.Process": procs, "r.Cpu": cpus}},
	}
	x := rels[r.IntN(len(rels))]
	intExpr := func() string {
		if len(x.ints) == 0 {
			return fmt.Sprint(r.IntN(5))
		}
		a := x.ints[r.IntN(len(x.ints))]
		switch r.IntN(6) {
		case 0:
			return a + " * " + fmt.Sprint(r.IntN(5)-2)
		case 1:
			return a + " + " + a
		case 2:
			return "-" + a
		case 3:
			return a + " - " + fmt.Sprint(r.IntN(9223372036854775807))
		case 4:
			return a + " % " + fmt.Sprint(r.IntN(3))
		}
		return a
	}
	ops := []string{"=", "!=", "<", "<=", ">", ">="}
	atom := func() string {
		switch r.IntN(3) {
		case 0:
			a := x.others[r.IntN(len(x.others))]
			c := x.consts[a][r.IntN(len(x.consts[a]))]
			return a + []string{" = ", " != "}[r.IntN(2)] + c
		case 1:
			return intExpr() + " " + ops[r.IntN(len(ops))] + " " + intExpr()
		}
		a := x.others[r.IntN(len(x.others))]
		return a + " = " + a
	}
	conds := testkit.RandConds(r, 4, atom)
	var targets []string
	for k := range 1 + r.IntN(3) {
		var e string
		switch r.IntN(4) {
		case 0:
			e = intExpr()
		case 1:
			e = atom()
		default:
			e = x.others[r.IntN(len(x.others))]
		}
		targets = append(targets, fmt.Sprintf("T%d = %s", k, e))
	}
	q := fmt.Sprintf("range of %s is %s\nretrieve (%s)", x.v, x.name, strings.Join(targets, ", "))
	if r.IntN(4) == 0 && x.name != "SendMessage" && x.name != "Interrupt" && x.name != "Note" {
		q += " valid at begin of " + x.v
	}
	if len(conds) > 0 {
		q += " where " + strings.Join(conds, " and ")
	}
	return q
}

// TestColumnarFallback: the shapes the columnar path does not support are
// left to the row operators (and give the reference's result), and the
// shapes it does support take it.
func TestColumnarFallback(t *testing.T) {
	checkShapes(t, []colShape{
		{q: `range of p is Process retrieve (p.Process, X = p.Prio * 2) where p.State = "Running" and p.Prio > 1`, took: []bool{true}},
		{q: `range of s is SendMessage retrieve (s.Mailbox) where s.Process != "P1" or s.Size >= 3`, took: []bool{true}},
		{q: `range of p is Process retrieve (p.Process) valid at begin of p where not (p.Prio = 2)`, took: []bool{true}},
		{q: `range of n is Note retrieve (n.Text, n.Urgent) where n.Weight > 0.5`, took: []bool{true}},
		// Groups past the dense bound (denseMax): numbered by hash.
		{q: `range of p is Process retrieve (p.Process, X = p.Prio * 1000000007, Y = p.Prio - 4611686018427387904)`, took: []bool{true}},
		// No support: a join with a conjunct over both variables
		// (columnar_join_test.go has the join's shapes), a when clause, begin of in a target,
		// strings in order, a float target, a bag, a string constant
		// target.
		{q: `range of p is Process range of r is RunningOn retrieve (p.Process, r.Cpu) where p.Process = r.Process and p.Prio > 1 when p precede r`, took: []bool{false}},
		{q: `range of p is Process retrieve (p.Process) when p overlap "7"`, took: []bool{false}},
		{q: `range of p is Process retrieve (p.Process, B = begin of p)`, took: []bool{false}},
		{q: `range of n is Note retrieve (n.Text) where n.Text < "m"`, took: []bool{false}},
		{q: `range of n is Note retrieve (n.Weight)`, took: []bool{false}},
		{q: `range of p is Process retrieve (p.Process, S = "x")`, took: []bool{false}},
		// A statement another reads runs on rows; the reader too
		// (its relation is derived).
		{q: `range of p is Process retrieve into R (p.Process) where p.Prio > 1
range of x is R retrieve (x.Process)`, took: []bool{false, false}},
		// Gaps, and the option, turn the path off.
		{q: `range of p is Process retrieve (p.Process)`, took: []bool{false}, opts: exec.Options{Gaps: func(string) []algebra.Span { return nil }}},
		{q: `range of p is Process retrieve (p.Process)`, took: []bool{false}, opts: exec.Options{NoColumnar: true}},
		// An arithmetic error abandons the path: the row operators
		// report it.
		{q: `range of p is Process retrieve (p.Process, X = p.Prio / (p.Prio - p.Prio))`, took: []bool{false}},
		// Also when the target is computed once per group, from the
		// column it is grouped by (colVec.keyOf).
		{q: `range of p is Process retrieve (p.Process, X = p.Prio * 4611686018427387904)`, took: []bool{false}},
		{q: `range of p is Process retrieve (X = (p.Prio + 9223372036854775806) * 2, p.State)`, took: []bool{false}},
		{q: `range of p is Process retrieve (X = (p.Prio + 3) * 2 - 1, p.State, Y = p.Prio)`, took: []bool{true}},
	})
	// Streaming output (OnElem) wants elements in time order: rows.
	cat := testkit.LoadCatalog(t, filepath.Join(testkit.Root(t), "testdata/differential/spec.sdl"))
	cfg := histgen.DefaultConfig(3)
	h := histgen.Random(cat, cfg)
	stmts := testkit.Compile(t, cat, "q", `range of p is Process retrieve (p.Process)`, cfg.Span)
	net, err := exec.Build(cat, stmts, []plan.Node{plan.Translate(stmts[0])}, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	elems := 0
	net.Stmts[0].Result.OnElem = func(stream.Elem) { elems++ }
	if err := net.RunHistory(h); err != nil {
		t.Fatal(err)
	}
	if net.Stmts[0].Columnar || elems == 0 {
		t.Errorf("with OnElem: columnar %v, %d elements seen", net.Stmts[0].Columnar, elems)
	}
}

// colShape is a query and which of its statements take the columnar path.
type colShape struct {
	q    string
	took []bool
	opts exec.Options
}

// checkShapes runs each shape over a random history of the differential
// schema through RunHistory: its statements give the reference's results,
// or fail with its error, and take the columnar path as the shape says.
func checkShapes(t *testing.T, shapes []colShape) {
	t.Helper()
	cat := testkit.LoadCatalog(t, filepath.Join(testkit.Root(t), "testdata/differential/spec.sdl"))
	cfg := histgen.DefaultConfig(3)
	h := histgen.Random(cat, cfg)
	for _, c := range shapes {
		stmts := testkit.Compile(t, cat, "q", c.q, cfg.Span)
		want, werr := ref.Eval(h, stmts)
		got, took, err := columnarRun(t, h, stmts, c.opts)
		if fmt.Sprint(werr) != fmt.Sprint(err) {
			t.Fatalf("%s: reference fails with %v, interpreter with %v", c.q, werr, err)
		}
		if err == nil {
			for i := range want {
				if render(got[i]) != render(want[i]) {
					t.Errorf("%s: statement %d differs from the reference", c.q, i+1)
				}
			}
		}
		if fmt.Sprint(took) != fmt.Sprint(c.took) {
			t.Errorf("%s: columnar %v, want %v", c.q, took, c.took)
		}
	}
}

// TestColumnsKeptAndRebuilt: a history's columns are built once and read
// again by later runs, and rebuilt when the table changes.
func TestColumnsKeptAndRebuilt(t *testing.T) {
	h := benchHistory(t, 30, 6)
	a := h.Columns("Process")
	if a == nil || a.Len != len(h.Table("Process").Rows) {
		t.Fatalf("columns %v", a)
	}
	if b := h.Columns("Process"); b != a {
		t.Error("columns built again for an unchanged table")
	}
	stmts := testkit.Compile(t, h.Catalog, "q", benchSelectProject, 0)
	before := render(runInterpreter(t, h, stmts))
	tab := h.Table("Process")
	tab.Add([]algebra.Value{algebra.Entity("P9999"), algebra.Enum("Running", 1), algebra.Int(4)}, 5000, 6000)
	c := h.Columns("Process")
	if c == a || c.Len != a.Len+1 {
		t.Fatalf("columns not rebuilt after Add: %d tuples, want %d", c.Len, a.Len+1)
	}
	after := render(runInterpreter(t, h, stmts))
	if after == before || !strings.Contains(after, "P9999") {
		t.Errorf("the result does not see the added tuple:\n%s", after)
	}
	want, err := ref.Eval(h, stmts)
	if err != nil {
		t.Fatal(err)
	}
	if after != render(want[0]) {
		t.Error("result after Add differs from the reference")
	}
	// Out of time order: the columns are in order of start all the same.
	tab.Rows[0], tab.Rows[len(tab.Rows)-1] = tab.Rows[len(tab.Rows)-1], tab.Rows[0]
	tab.Add(tab.Rows[0].Vals, tab.Rows[0].From, tab.Rows[0].To) // changes gen
	d := h.Columns("Process")
	for i := 1; i < d.Len; i++ {
		if d.From[i-1] > d.From[i] {
			t.Fatal("columns not in order of start")
		}
	}
	want, err = ref.Eval(h, stmts)
	if err != nil {
		t.Fatal(err)
	}
	if got, took, _ := columnarRun(t, h, stmts, exec.Options{}); !took[0] || render(got[0]) != render(want[0]) {
		t.Errorf("unsorted table: columnar %v, result differs from the reference %v", took[0], render(got[0]) != render(want[0]))
	}
	// A value whose kind is not its attribute's: no columns, rows.
	tab.Add([]algebra.Value{algebra.Str("P1"), algebra.Enum("Running", 1), algebra.Int(4)}, 5000, 6000)
	if h.Columns("Process") != nil {
		t.Error("a table with a string for an entity was encoded")
	}
}

// TestColumnsConcurrent: runs over one history at once build and read its
// columns and shared dictionaries safely (run under -race) and agree.
func TestColumnsConcurrent(t *testing.T) {
	h := benchHistory(t, 40, 8)
	queries := []string{benchSelectProject, `range of r is RunningOn retrieve (r.Process, r.Cpu) where r.Cpu != "C2"`}
	var want []string
	var stmts [][]*check.Retrieve
	for _, q := range queries {
		s := testkit.Compile(t, h.Catalog, "q", q, 0)
		w, err := ref.Eval(h, s)
		if err != nil {
			t.Fatal(err)
		}
		stmts, want = append(stmts, s), append(want, render(w[0]))
	}
	errs := make(chan string, 8)
	for g := range 8 {
		go func() {
			got, took, err := columnarRun(t, h, stmts[g%2], exec.Options{})
			switch {
			case err != nil:
				errs <- err.Error()
			case !took[0] || render(got[0]) != want[g%2]:
				errs <- fmt.Sprintf("%s: columnar %v, differs from the reference", queries[g%2], took[0])
			default:
				errs <- ""
			}
		}()
	}
	for range 8 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}
