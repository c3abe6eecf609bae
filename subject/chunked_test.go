package subject

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/history"
)

// TestChunkedMatchesRows holds whole commands over a history directory,
// and over a database the history is recorded into (small blocks and
// frequent checkpoints, so windowed reads start at checkpoints and look
// ends up), that run columnar over chunks (exec.Network.RunChunks) to the row
// operators (query.Program.WithoutColumnar): over the differential
// corpus and random σ/π queries on random histories, the result elements
// (kind, time, values, which result an End ends) are the same, in the
// same time order (see chunkElems), and so are the printed outputs in CSV and JSON Lines. It fails
// if the chunked path is taken too rarely to be tested, over either.
func TestChunkedMatchesRows(t *testing.T) {
	root := testkit.Root(t)
	specPath := filepath.Join(root, "testdata/differential/spec.sdl")
	spec := testkit.ReadFile(t, specPath)
	cat := testkit.LoadCatalog(t, specPath)
	var queries []string
	for _, q := range testkit.ReadCorpus(t, filepath.Join(root, "testdata/differential/queries.tq")) {
		queries = append(queries, q.Text)
	}
	r := rand.New(rand.NewPCG(16, 3))
	for range 150 {
		queries = append(queries, chunkSigmaPi(r))
	}
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	var cfgs []histgen.Config
	for seed := range seeds {
		cfg := histgen.DefaultConfig(uint64(seed))
		cfg.Edges = seed%2 == 1
		cfg.Integrity = true
		cfgs = append(cfgs, cfg)
	}
	dirs := chunkDirs(t, spec, cat, cfgs, func(int) bool { return true })
	taken, runs := chunkCompare(t, queries, dirs, false)
	for _, kind := range []string{"history", "db"} {
		t.Logf("%s: chunked path taken by %d of %d runs", kind, taken[kind], runs[kind])
		if taken[kind] < runs[kind]/4 {
			t.Fatalf("%s: chunked path taken by %d of %d runs: too few to test it", kind, taken[kind], runs[kind])
		}
	}
}

// chunkDir is a history written as a directory or recorded in a
// database (kind "history" or "db").
type chunkDir struct {
	kind string
	opts Options
}

// chunkDirs writes a random history per configuration as a directory
// and, where db says, into a database (small blocks and frequent
// checkpoints, so windowed reads start at checkpoints and look ends up).
func chunkDirs(t *testing.T, spec string, cat *algebra.Catalog, cfgs []histgen.Config, withDB func(i int) bool) []chunkDir {
	var dirs []chunkDir
	for i, cfg := range cfgs {
		h := histgen.Random(cat, cfg)
		dir := t.TempDir()
		if err := history.Write(dir, h, spec, "spec.sdl"); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, chunkDir{"history", Options{History: dir}})
		if !withDB(i) {
			continue
		}
		ddir := filepath.Join(t.TempDir(), "db")
		d, err := db.Create(ddir, db.Spec{Name: "spec.sdl", Text: spec})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Import(h, db.WriterOptions{BlockElems: 4, CheckpointElems: 6, CheckpointFactor: 1}, nil); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, chunkDir{"db", Options{DB: ddir}})
	}
	return dirs
}

// chunkCompare runs each query over each directory through the columnar
// path over chunks and through the row operators and fails unless the
// result elements (chunkElems), the errors and the printed CSV and JSON
// Lines agree; it counts per kind the runs and those that went through
// chunks. A query that does not compile is skipped (a corpus query for
// another clock or spec) unless strict.
func chunkCompare(t *testing.T, queries []string, dirs []chunkDir, strict bool) (taken, runs map[string]int) {
	taken, runs = map[string]int{}, map[string]int{}
	for qi, q := range queries {
		for _, src := range dirs {
			dir := src.kind + " " + src.opts.History + src.opts.DB
			sub, err := Open(context.Background(), src.opts)
			if err != nil {
				t.Fatal(err)
			}
			prog, err := query.Compile(sub.Catalog(), []query.Source{{Name: fmt.Sprint("q", qi), Text: q}}, check.Options{Now: sub.Now()})
			if err != nil {
				sub.Close()
				if strict {
					t.Fatalf("%s\n%v", q, err)
				}
				continue
			}
			runs[src.kind]++
			gotE, gst, gerr := chunkElems(sub, prog)
			wantE, wst, werr := chunkElems(sub, prog.WithoutColumnar())
			if gst.History != nil && gst.History.Chunked || gst.Read != nil && gst.Read.Chunked {
				taken[src.kind]++
			}
			if wst.History != nil && wst.History.Chunked || wst.Read != nil && wst.Read.Chunked {
				t.Fatalf("%s\n%s: the row run went through chunks", q, dir)
			}
			if fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("%s\n%s: chunked run fails with %v, row run with %v", q, dir, gerr, werr)
			}
			if gotE != wantE {
				t.Fatalf("%s\n%s: elements differ\n--- chunked\n%s--- rows\n%s", q, dir, gotE, wantE)
			}
			for _, kind := range []format.Kind{format.CSV, format.JSONL} {
				o := format.Options{Kind: kind}
				var got, want strings.Builder
				_, gerr := Print(context.Background(), sub, prog, PrintOptions{Output: o}, &got)
				_, werr := Print(context.Background(), sub, prog.WithoutColumnar(), PrintOptions{Output: o}, &want)
				if fmt.Sprint(gerr) != fmt.Sprint(werr) || got.String() != want.String() {
					t.Fatalf("%s\n%s (%v): outputs differ (%v, %v)\n--- chunked\n%s--- rows\n%s", q, dir, kind, gerr, werr, got.String(), want.String())
				}
			}
			sub.Close()
		}
	}
	return taken, runs
}

// chunkElems runs prog over sub and renders the result elements, each
// End naming the result it ends by its values and start. The order of
// elements at one time is the row network's own (hash order, not
// deterministic), so each run of Ends, or of Begins and Events, at one
// time is sorted: what is compared is time order, Ends before Begins at a
// time, and the elements themselves.
func chunkElems(sub Subject, prog *query.Program) (string, Stats, error) {
	var lines []string
	var run []string
	runKey := ""
	flush := func() {
		slices.Sort(run)
		lines = append(lines, run...)
		run = run[:0]
	}
	_, st, err := sub.Run(context.Background(), prog, RunOptions{Discard: true, OnElem: func(i int, e stream.Elem) {
		key := fmt.Sprint(i, e.T, e.Kind == stream.End)
		if key != runKey {
			flush()
			runKey = key
		}
		switch e.Kind {
		case stream.End:
			run = append(run, fmt.Sprintf("%d end %d of %v from %d", i, e.T, e.Rec.Vals, e.Rec.From))
		default:
			run = append(run, fmt.Sprintf("%d %v %d %v", i, e.Kind, e.T, e.Rec.Vals))
		}
	}})
	flush()
	return strings.Join(lines, "\n"), st, err
}

// chunkSigmaPi is a random σ/π query of the differential spec without
// arithmetic (which RunChunks leaves to the row operators).
func chunkSigmaPi(r *rand.Rand) string {
	type rel struct {
		name, v string
		attrs   []string
		consts  map[string][]string
	}
	procs, cpus, mboxes := []string{`"P1"`, `"P2"`}, []string{`"C1"`, `"C2"`}, []string{`"M1"`, `"M2"`}
	rels := []rel{
		{"Process", "p", []string{"p.Process", "p.State", "p.Prio"},
			map[string][]string{"p.Process": procs, "p.State": {`"Running"`, `"Done"`}, "p.Prio": {"0", "3"}}},
		{"SendMessage", "s", []string{"s.Process", "s.Mailbox", "s.Size"},
			map[string][]string{"s.Process": procs, "s.Mailbox": mboxes, "s.Size": {"1", "100"}}},
		{"Interrupt", "i", []string{"i.Cpu", "i.Level"}, map[string][]string{"i.Cpu": cpus, "i.Level": {"2", "5"}}},
		{"Note", "n", []string{"n.Text", "n.Urgent"},
			map[string][]string{"n.Text": {`"a"`, `"b"`, `""`}, "n.Urgent": {"true", "false"}}},
		{"RunningOn", "r", []string{"r.Process", "r.Cpu"}, map[string][]string{"r.Process": procs, "r.Cpu": cpus}},
		{"Waiting", "w", []string{"w.Process", "w.Mailbox"}, map[string][]string{"w.Process": procs, "w.Mailbox": mboxes}},
	}
	x := rels[r.IntN(len(rels))]
	atom := func() string {
		a := x.attrs[r.IntN(len(x.attrs))]
		c := x.consts[a][r.IntN(len(x.consts[a]))]
		op := []string{" = ", " != "}[r.IntN(2)]
		if c[0] != '"' && c != "true" && c != "false" {
			op = []string{" = ", " != ", " < ", " >= "}[r.IntN(4)]
		}
		return a + op + c
	}
	conds := testkit.RandConds(r, 3, atom)
	var targets []string
	for _, a := range x.attrs {
		if r.IntN(2) == 0 {
			targets = append(targets, a)
		}
	}
	if len(targets) == 0 {
		targets = x.attrs[:1]
	}
	q := fmt.Sprintf("range of %s is %s\nretrieve (%s)", x.v, x.name, strings.Join(targets, ", "))
	if len(conds) > 0 {
		q += " where " + strings.Join(conds, " and ")
	}
	return q + "\n"
}

// BenchmarkChunkedCommand times P1's sends printed as CSV over a history
// directory of 200,000 sends (one process in eight is P1), through the
// chunked columnar path and through the row operators; it reports
// tuples/s.
func BenchmarkChunkedCommand(b *testing.B) {
	const n = 200_000
	dir := sendsHistory(b, n, "")
	sub, err := Open(context.Background(), Options{History: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	prog, err := query.Compile(sub.Catalog(), []query.Source{{Name: "q", Text: p1Sends}}, check.Options{Now: sub.Now()})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		prog *query.Program
	}{{"chunked", prog}, {"rows", prog.WithoutColumnar()}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Print(context.Background(), sub, c.prog, PrintOptions{Output: format.Options{Kind: format.CSV}}, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tuples/s")
		})
	}
}

// TestSemiChunksMatchRows holds whole commands that run a semi-join
// columnar over two relations' chunks (exec.Network.RunSemi) to the row
// operators, as TestChunkedMatchesRows does for σ/π: random queries
// joining two relations of the differential spec on an entity, one
// variable existential (in no target and no valid clause) and compared
// with the other by precede in either direction (or not at all), with
// conjuncts over each, over random histories and their databases. It
// fails if the path is taken too rarely to be tested.
func TestSemiChunksMatchRows(t *testing.T) {
	root := testkit.Root(t)
	specPath := filepath.Join(root, "testdata/differential/spec.sdl")
	spec := testkit.ReadFile(t, specPath)
	cat := testkit.LoadCatalog(t, specPath)
	r := rand.New(rand.NewPCG(16, 4))
	n := 120
	if testing.Short() {
		n = 40
	}
	var queries []string
	for range n {
		queries = append(queries, chunkSemi(r))
	}
	var cfgs []histgen.Config
	for seed := range 3 {
		cfg := histgen.DefaultConfig(uint64(seed + 7))
		cfg.Edges = seed%2 == 1
		cfg.Integrity = true
		if seed == 2 {
			// Long enough that results are released between batches
			// (colBatch), not only at the end.
			cfg.Tuples, cfg.Span, cfg.MaxLen = 6000, 16000, 40
		}
		cfgs = append(cfgs, cfg)
	}
	dirs := chunkDirs(t, spec, cat, cfgs, func(i int) bool { return i == 0 })
	taken, runs := chunkCompare(t, queries, dirs, true)
	for _, kind := range []string{"history", "db"} {
		t.Logf("%s: semi-join chunked path taken by %d of %d runs", kind, taken[kind], runs[kind])
		if taken[kind] < runs[kind]/3 {
			t.Fatalf("%s: semi-join chunked path taken by %d of %d runs: too few to test it", kind, taken[kind], runs[kind])
		}
	}
}

// chunkSemi is a random query of the differential spec joining two
// relations on an entity, one variable read only by the where and when
// clauses (existential).
func chunkSemi(r *rand.Rand) string {
	type rel struct {
		name, v string
		event   bool
		attrs   []string
		consts  map[string][]string
	}
	procs, cpus, mboxes := []string{`"P1"`, `"P2"`}, []string{`"C1"`, `"C2"`}, []string{`"M1"`, `"M2"`}
	proc := rel{"Process", "p", false, []string{"Process", "State", "Prio"},
		map[string][]string{"Process": procs, "State": {`"Running"`, `"Done"`}, "Prio": {"0", "3"}}}
	send := rel{"SendMessage", "s", true, []string{"Process", "Mailbox", "Size"},
		map[string][]string{"Process": procs, "Mailbox": mboxes, "Size": {"1", "100"}}}
	intr := rel{"Interrupt", "i", true, []string{"Cpu", "Level"}, map[string][]string{"Cpu": cpus, "Level": {"2", "5"}}}
	run := rel{"RunningOn", "r", false, []string{"Process", "Cpu"}, map[string][]string{"Process": procs, "Cpu": cpus}}
	wait := rel{"Waiting", "w", false, []string{"Process", "Mailbox"}, map[string][]string{"Process": procs, "Mailbox": mboxes}}
	pairs := []struct {
		a, b rel
		keys [][2]string
	}{
		{send, wait, [][2]string{{"Mailbox", "Mailbox"}, {"Process", "Process"}}},
		{run, wait, [][2]string{{"Process", "Process"}}},
		{proc, run, [][2]string{{"Process", "Process"}}},
		{intr, run, [][2]string{{"Cpu", "Cpu"}}},
		{send, proc, [][2]string{{"Process", "Process"}}},
		{send, run, [][2]string{{"Process", "Process"}}},
	}
	pr := pairs[r.IntN(len(pairs))]
	x, o, keys := pr.a, pr.b, pr.keys
	if r.IntN(3) == 0 {
		x, o = o, x
		for i := range keys {
			keys[i] = [2]string{keys[i][1], keys[i][0]}
		}
	}
	atom := func(v rel) string {
		a := v.attrs[r.IntN(len(v.attrs))]
		c := v.consts[a][r.IntN(len(v.consts[a]))]
		op := []string{" = ", " != "}[r.IntN(2)]
		if c[0] != '"' {
			op = []string{" = ", " != ", " < ", " >= "}[r.IntN(4)]
		}
		return v.v + "." + a + op + c
	}
	var conds []string
	for _, k := range keys[:1+r.IntN(len(keys))] {
		conds = append(conds, fmt.Sprintf("%s.%s = %s.%s", x.v, k[0], o.v, k[1]))
	}
	for range r.IntN(3) {
		v := x
		if r.IntN(2) == 0 {
			v = o
		}
		c := atom(v)
		if r.IntN(4) == 0 {
			c = "(" + c + " or " + atom(v) + ")"
		}
		conds = append(conds, c)
	}
	// x as the when clause may read it: begin of x, or an event itself.
	xt := []string{"begin of " + x.v}
	if x.event {
		xt = append(xt, x.v, "end of "+x.v)
	}
	ot := []string{o.v, "begin of " + o.v, "end of " + o.v}
	var when string
	switch r.IntN(7) {
	case 0: // TQuel's default: the variables overlap
	case 6: // x read by no when clause: any witness
		when = "begin of " + o.v + " precede " + ot[r.IntN(len(ot))]
	case 1:
		when = x.v + " overlap " + o.v // not summarized by a begin: the row operators
	case 2, 3:
		when = xt[r.IntN(len(xt))] + " precede " + ot[r.IntN(len(ot))]
	default:
		when = ot[r.IntN(len(ot))] + " precede " + xt[r.IntN(len(xt))]
	}
	valid := []string{"at end of " + o.v, "at begin of " + o.v, "from begin of " + o.v + " to end of " + o.v}[r.IntN(3)]
	if o.event {
		valid = "at " + o.v
	}
	var targets []string
	for _, a := range o.attrs {
		if r.IntN(2) == 0 {
			targets = append(targets, o.v+"."+a)
		}
	}
	if len(targets) == 0 {
		targets = []string{o.v + "." + o.attrs[0]}
	}
	q := fmt.Sprintf("range of %s is %s\nrange of %s is %s\nretrieve (%s)\nvalid %s\nwhere %s\n",
		x.v, x.name, o.v, o.name, strings.Join(targets, ", "), valid, strings.Join(conds, " and "))
	if when != "" {
		q += "when " + when + "\n"
	}
	return q
}

// TestSemiChunksShapes: which semi-joins over a history directory run
// columnar over chunks (exec.Network.RunSemi) and which are left to the
// row operators; the results agree either way (TestSemiChunksMatchRows).
func TestSemiChunksShapes(t *testing.T) {
	root := testkit.Root(t)
	specPath := filepath.Join(root, "testdata/differential/spec.sdl")
	cat := testkit.LoadCatalog(t, specPath)
	dir := t.TempDir()
	if err := history.Write(dir, histgen.Random(cat, histgen.DefaultConfig(5)), testkit.ReadFile(t, specPath), "spec.sdl"); err != nil {
		t.Fatal(err)
	}
	const sw = "range of s is SendMessage\nrange of w is Waiting\n"
	for _, c := range []struct {
		q    string
		took bool
	}{
		{sw + `retrieve (w.Process) valid at end of w where s.Mailbox = w.Mailbox and s.Process = "P1" when s precede end of w`, true},
		{sw + `retrieve (w.Process, w.Mailbox) valid from begin of w to end of w where s.Mailbox = w.Mailbox when begin of w precede s`, true},
		{sw + `retrieve (w.Process) valid at begin of w where s.Mailbox = w.Mailbox and s.Process = w.Process and s.Size >= 100 when end of s precede end of w`, true},
		// Rows: a when clause not decided by a begin (TQuel's default
		// is that the variables overlap), a conjunct over both other
		// than an equality, arithmetic, no existential variable, a
		// self-join, two statements.
		{sw + `retrieve (w.Process) valid at end of w where s.Mailbox = w.Mailbox when s overlap w`, false},
		{sw + `retrieve (w.Process) valid at end of w where s.Mailbox = w.Mailbox`, false},
		{sw + `retrieve (w.Process) valid at end of w where s.Mailbox = w.Mailbox and s.Process != w.Process`, false},
		{sw + `retrieve (w.Process) valid at end of w where s.Mailbox = w.Mailbox and s.Size + 1 > 3`, false},
		{sw + `retrieve (w.Process, s.Size) valid at end of w where s.Mailbox = w.Mailbox`, false},
		{"range of w is Waiting\nrange of v is Waiting\n" + `retrieve (w.Process) valid at end of w where v.Mailbox = w.Mailbox when begin of v precede end of w`, false},
		{sw + `retrieve (w.Process) valid at end of w where s.Mailbox = w.Mailbox
` + sw + `retrieve (w.Mailbox) valid at end of w where s.Mailbox = w.Mailbox`, false},
	} {
		sub, err := Open(context.Background(), Options{History: dir})
		if err != nil {
			t.Fatal(err)
		}
		prog, err := query.Compile(sub.Catalog(), []query.Source{{Name: "q", Text: c.q}}, check.Options{Now: sub.Now()})
		if err != nil {
			t.Fatalf("%s\n%v", c.q, err)
		}
		_, st, err := sub.Run(context.Background(), prog, RunOptions{Discard: true})
		sub.Close()
		if err != nil {
			t.Fatalf("%s\n%v", c.q, err)
		}
		if took := st.History.Chunked; took != c.took {
			t.Errorf("%s\nchunked %v, want %v", c.q, took, c.took)
		}
	}
}
