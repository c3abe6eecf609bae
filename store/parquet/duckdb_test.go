package parquet_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/parquet"
	"github.com/tqmon/tqmon/store/replay"
)

// duckDB finds node and the @duckdb/node-api package make bench-engine
// installs (internal/benchengine), or skips saying what is missing.
func duckDB(t *testing.T) (node, script string) {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(here), "..", "..", "internal", "benchengine")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("DuckDB runs under Node.js, and node is not on PATH: install nodejs and npm to run this test")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@duckdb", "node-api")); err != nil {
		t.Skipf("DuckDB's @duckdb/node-api is not installed: run npm ci in %s (make bench-engine does) to run this test", dir)
	}
	return node, filepath.Join(dir, "duck.mjs")
}

// TestDuckDBReads: DuckDB, reading the files by the documented layout
// (docs/parquet.md: a glob, hive partitions, from_ns/to_ns with NULL for
// open), counts the tuples tqmon recorded and answers an interval
// predicate — the processes valid at an instant — as tqmon's timeslice
// query over the same files does.
func TestDuckDBReads(t *testing.T) {
	node, script := duckDB(t)
	dir := t.TempDir()
	spec := db.Spec{Name: "os.sdl", Text: ossensors.SDL}
	w, err := parquet.Create(dir, spec, parquet.Options{Host: "web-1", Every: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	cat := w.Catalog()
	state := cat.Lookup("Process").Attrs[1].Type.Enum
	procs, err := w.Relation("Process")
	if err != nil {
		t.Fatal(err)
	}
	const minute = int64(time.Minute)
	base := int64(1_800_000_000) * int64(time.Second)
	var total int
	for i := range 300 {
		at := base + int64(i)*minute
		st := state.Members[i%4]
		from := at - int64(i%11)*minute
		vals := []algebra.Value{algebra.Entity(fmt.Sprintf("P%d", i)), algebra.Enum(st, state.Ordinal(st))}
		if i%9 == 0 {
			err = procs.Begin(uint64(i), from, vals) // still open at the end
		} else {
			err = procs.Whole(from, at, vals)
		}
		if err != nil {
			t.Fatal(err)
		}
		if from < at || i%9 == 0 {
			total++ // an empty tuple is not recorded
		}
		w.Advance(at)
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	instant := base + 150*minute + minute/2
	out := filepath.Join(t.TempDir(), "out.csv")
	sql := fmt.Sprintf(`
CREATE VIEW process AS SELECT * FROM read_parquet('%s/relation=Process/*/*/*.parquet', hive_partitioning = true);
COPY (
  SELECT (SELECT count(*) FROM process) AS n,
         (SELECT count(*) FROM process WHERE from_ns <= %d AND (to_ns IS NULL OR to_ns > %d)) AS valid,
         (SELECT string_agg(DISTINCT host, ',') FROM process) AS hosts,
         (SELECT count(*) FROM process WHERE to_ns IS NULL) AS open
) TO '%s' (HEADER false);
`, dir, instant, instant, out)
	file := filepath.Join(t.TempDir(), "q.sql")
	if err := os.WriteFile(file, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(node, script, file).CombinedOutput(); err != nil {
		t.Fatalf("DuckDB: %v\n%s", err, msg)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}

	// tqmon's answer over the same files.
	s, err := parquet.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := query.Compile(s.Catalog(), []query.Source{{Name: "slice",
		Text: fmt.Sprintf(`range of p is Process retrieve (p.Process) when p overlap "%d"`, instant)}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := replay.Plan(s.Catalog(), prog.Stmts)
	if err != nil {
		t.Fatal(err)
	}
	rs, st, err := replay.RunStore(replay.Parquet(s), q, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	valid := len(rs[0].Table.Rows)
	if valid == 0 || st.Read.Files >= s.Files()["Process"] {
		t.Fatalf("tqmon: %d valid, %d files read of %d", valid, st.Read.Files, s.Files()["Process"])
	}
	want := fmt.Sprintf("%d,%d,web-1,%d", total, valid, (300+8)/9)
	if strings.TrimSpace(string(got)) != want {
		t.Fatalf("DuckDB says %q (count, valid at the instant, hosts, open); tqmon %q", strings.TrimSpace(string(got)), want)
	}
}
