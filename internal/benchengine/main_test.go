package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/store/history"
)

func TestSplitLast(t *testing.T) {
	for _, c := range []struct{ in, setup, query string }{
		{"SELECT 1", "", "SELECT 1"},
		{"SELECT 1;\n", "", "SELECT 1"},
		{"-- x; y\nSET a = 0;\nSELECT 1\n;", "-- x; y\nSET a = 0;\n", "SELECT 1\n"},
	} {
		setup, query := splitLast(c.in)
		if setup != c.setup || query != c.query {
			t.Errorf("splitLast(%q) = %q, %q; want %q, %q", c.in, setup, query, c.setup, c.query)
		}
	}
}

// TestRowsCanonical: tqmon's "forever" and SQL's empty field are the same,
// and row order does not matter.
func TestRowsCanonical(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	os.WriteFile(a, []byte("P,from,to\nP2,5,forever\nP1,1,3\n"), 0o644)
	os.WriteFile(b, []byte("P,from,to\nP1,1,3\nP2,5,\n"), 0o644)
	ra, na, err := rows(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, _, err := rows(b)
	if err != nil {
		t.Fatal(err)
	}
	if ra != rb || na != 2 {
		t.Errorf("%q (%d rows) against %q", ra, na, rb)
	}
}

// TestQueriesExist: every query's files are where the harness looks, and
// the views cover the relations the SQL reads.
func TestQueriesExist(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := history.LoadSpec(filepath.Join(root, "testdata/paper/os.sdl"))
	if err != nil {
		t.Fatal(err)
	}
	views := viewsSQL(generated{dir: filepath.Join(root, "testdata/paper")}, cat)
	for _, name := range []string{"SendMessage", "Waiting", "RunningOn", "Mailbox"} {
		if !strings.Contains(views, `CREATE VIEW "`+name+`"`) {
			t.Errorf("no view of %s in\n%s", name, views)
		}
	}
	for _, q := range benchQueries() {
		files := []string{q.tq}
		for _, v := range q.sql {
			files = append(files, v.file)
		}
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(root, f)); err != nil {
				t.Errorf("%s: %v", q.name, err)
			}
		}
	}
}
