package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/record"
	"github.com/tqmon/tqmon/store/replay"
)

// runQueryDB evaluates the statements over a database (query --db):
// plans rewritten so temporal selections read only the blocks they need.
func runQueryDB(f *queryFlags, out format.Options, params map[string]string, naive bool, stdout, stderr io.Writer) error {
	same := f.record != "" && samePath(f.record, f.dbDir)
	d, prog, q, err := openStored(f.dbDir, !same, f.srcs, params)
	if err != nil {
		return err
	}
	defer d.Close()
	noteLive(stderr, d)
	if f.explain {
		return explainStored(stdout, q)
	}
	var rec *recording
	if f.record != "" {
		var target *db.DB
		if same {
			target = d
		}
		if rec, err = startRecording(f.record, target, d.Spec(), prog.Stmts, d.Window()); err != nil {
			return err
		}
	}
	var results []remote.Result
	if f.acquire {
		h, err := d.History(nil)
		if err != nil {
			rec.abort()
			return runtimeErr(err)
		}
		var st exec.AcquireStats
		results, st, err = prog.RunAcquire(h, naive)
		if err != nil {
			rec.abort()
			return runtimeErr(err)
		}
		if f.stats {
			printAcquireStats(stderr, st)
		}
	} else {
		rs, st, err := replay.Run(d, q, replay.Options{})
		if err != nil {
			rec.abort()
			return runtimeErr(prog.Locate(err))
		}
		for _, r := range rs {
			results = append(results, remote.Result{Stmt: r.Stmt, Table: r.Table})
		}
		if f.stats {
			printReadStats(stderr, d, st)
		}
	}
	if rec != nil {
		for i, r := range results {
			rec.d.Table(i, r.Table)
		}
		if err := rec.finish(); err != nil {
			return err
		}
	}
	return writeResults(stdout, results, out)
}

// openStored opens a database and compiles statements over it ("now" is
// the end of what it observed), planned for stored relations.
func openStored(dir string, readOnly bool, srcs []remote.Source, params map[string]string) (*db.DB, *remote.Program, *replay.Query, error) {
	d, err := db.Open(dir, db.Options{ReadOnly: readOnly})
	if err != nil {
		return nil, nil, nil, usageErr(err)
	}
	now := algebra.Time(0)
	if _, end, ok := d.Extent(); ok {
		now = end
	}
	prog, err := remote.Compile(d.Catalog(), srcs, check.Options{Params: params, Now: now})
	if err != nil {
		d.Close()
		return nil, nil, nil, usageErr(err)
	}
	q, err := replay.Plan(d.Catalog(), prog.Stmts)
	if err != nil {
		d.Close()
		return nil, nil, nil, runtimeErr(err)
	}
	return d, prog, q, nil
}

func writeResults(stdout io.Writer, results []remote.Result, out format.Options) error {
	w := bufio.NewWriter(stdout)
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := format.Write(w, r.Table, out); err != nil {
			return runtimeErr(err)
		}
	}
	return w.Flush()
}

func printReadStats(w io.Writer, d *db.DB, st replay.Stats) {
	blocks := map[string]uint64{}
	for _, s := range d.Stats() {
		blocks[s.Name] = s.Blocks
	}
	var total uint64
	for _, r := range st.Reads {
		total += blocks[r.Rel]
	}
	fmt.Fprintf(w, "blocks read: %d of %d\n", st.Read.Blocks, total)
	fmt.Fprintf(w, "checkpoint parts read: %d\nends parts read: %d\nelements read: %d\n", st.Read.Checkpoints, st.Read.EndsParts, st.Read.Elements)
	for _, r := range st.Reads {
		how := "whole"
		if r.Window != nil {
			how = "through " + plan.WindowLabel(*r.Window)
		}
		fmt.Fprintf(w, "read %s %s\n", r.Rel, how)
	}
	fmt.Fprintf(w, "peak held: %d\n", st.PeakHeld)
}

// explainStored prints each retrieve's plan over the database: the scan
// rules applied and what each relation is read through.
func explainStored(stdout io.Writer, q *replay.Query) error {
	w := bufio.NewWriter(stdout)
	for i, r := range q.Rewrite {
		if i > 0 {
			fmt.Fprintln(w)
		}
		name := q.Stmts[i].Name
		if name == "" {
			name = fmt.Sprintf("retrieve %d", i+1)
		}
		fmt.Fprintf(w, "%s:\ninitial: %s\n", name, plan.String(r.Initial))
		for _, st := range r.Steps {
			fmt.Fprintf(w, "%s: %s\n", st.Rule, plan.String(st.After))
		}
		fmt.Fprintf(w, "final:\n%s", plan.Tree(r.Final))
	}
	reads := plan.ReadsOf(q.Plans)
	for _, r := range reads.Rels {
		how := "whole"
		if r.Window != nil {
			how = "through " + plan.WindowLabel(*r.Window)
		}
		fmt.Fprintf(w, "reads %s %s\n", r.Rel.Name, how)
	}
	return w.Flush()
}

func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && filepath.Clean(aa) == filepath.Clean(bb)
}

// recording stores a program's results (query --record).
type recording struct {
	db    *db.DB
	own   bool // the recording opened db (and closes it)
	w     *db.Writer
	d     *record.Derived
	fresh bool
}

// startRecording opens (or, given, reuses) the database results go into
// — creating it with spec when it does not exist — and declares the
// retrieves' result relations there. window is the span the results
// cover, written when the database is new.
func startRecording(dir string, target *db.DB, spec db.Spec, stmts []*check.Retrieve, window *algebra.Window) (*recording, error) {
	rels, err := record.Results(stmts)
	if err != nil {
		return nil, usageErr(err)
	}
	r := &recording{db: target}
	if target == nil {
		r.own = true
		r.db, err = db.Open(dir, db.Options{})
		if err != nil && !isMissing(dir) {
			return nil, usageErr(fmt.Errorf("--record: %w", err))
		}
		if err != nil {
			if r.db, err = db.Create(dir, spec); err != nil {
				return nil, usageErr(fmt.Errorf("--record: %w", err))
			}
			r.fresh = true
		}
	}
	fail := func(err error) (*recording, error) {
		if r.own {
			r.db.Close()
		}
		return nil, usageErr(fmt.Errorf("--record: %w", err))
	}
	if err := r.db.AddRelations(rels); err != nil {
		return fail(err)
	}
	if r.w, err = r.db.NewWriter(db.WriterOptions{}); err != nil {
		return fail(err)
	}
	if r.fresh && window != nil {
		r.w.SetWindow(*window)
	}
	names := make([]string, len(rels))
	for i, rel := range rels {
		names[i] = rel.Name
	}
	if r.d, err = record.NewDerived(r.w, names); err != nil {
		r.w.Close()
		return fail(err)
	}
	return r, nil
}

// isMissing reports whether dir does not exist or is empty: a new
// database may be made there.
func isMissing(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err != nil || len(ents) == 0
}

// finish makes the results durable.
func (r *recording) finish() error {
	err := r.d.Err()
	if cerr := r.w.Close(); err == nil {
		err = cerr
	}
	if r.own {
		if cerr := r.db.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return runtimeErr(fmt.Errorf("--record: %w", err))
	}
	return nil
}

// abort ends a recording after a failed run, keeping what was written.
func (r *recording) abort() {
	if r != nil {
		r.finish()
	}
}

// recordTables stores the results of a run over a history (query
// --history --record).
func recordTables(dir, historyDir string, prog *remote.Program, results []remote.Result, window *algebra.Window) error {
	spec, err := historySpec(historyDir)
	if err != nil {
		return usageErr(err)
	}
	rec, err := startRecording(dir, nil, spec, prog.Stmts, window)
	if err != nil {
		return err
	}
	for i, r := range results {
		rec.d.Table(i, r.Table)
	}
	return rec.finish()
}
