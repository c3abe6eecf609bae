package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDBCheckRepair: a database with a damaged table is refused by every
// command that reads it (exit non-zero, the table named), found by db
// check (exit 1), and db repair copies out what is intact, which then
// checks clean and answers queries; the damaged database is never changed.
func TestDBCheckRepair(t *testing.T) {
	dir := t.TempDir()
	dbDir := filepath.Join(dir, "paper.db")
	if code, _, stderr := tqmon(t, "import", "--history", "../../testdata/paper", "--db", dbDir); code != 0 {
		t.Fatalf("import: %d %s", code, stderr)
	}
	if code, out, _ := tqmon(t, "db", "check", dbDir); code != 0 || !strings.Contains(out, "no damage") {
		t.Fatalf("check of a sound database: %d\n%s", code, out)
	}
	tables, _ := filepath.Glob(filepath.Join(dbDir, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table")
	}
	data, _ := os.ReadFile(tables[0])
	os.WriteFile(tables[0], data[:len(data)/3], 0o644) // cut short: badger panicked on this
	name := filepath.Base(tables[0])
	q := "range of p is Process retrieve (p.Process, p.State)"
	for _, args := range [][]string{
		{"query", "--db", dbDir, "-e", q},
		{"export", "--db", dbDir, "--out", filepath.Join(dir, "out")},
		{"db", "check", dbDir},
	} {
		code, _, stderr := tqmon(t, args...)
		if code == 0 || !strings.Contains(stderr, dbDir) || !strings.Contains(stderr, name) {
			t.Errorf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
	}
	// The only table held everything: nothing to copy out but an error.
	if code, _, stderr := tqmon(t, "db", "repair", dbDir, "--out", filepath.Join(dir, "r.db")); code == 0 || !strings.Contains(stderr, "nothing can be read") || !strings.Contains(stderr, name) {
		t.Errorf("repair of a database with nothing left: %d %s", code, stderr)
	}
	if code, _, stderr := tqmon(t, "db", "repair", dbDir); code != 2 || !strings.Contains(stderr, "never repaired in place") {
		t.Errorf("repair without --out: %d %s", code, stderr)
	}
}

// TestQueryWhileRecording: tqmon query --db answers over a recording still
// running (what it has committed, saying so and up to when), from the
// first instant the database exists — before the recorder's first commit
// it answers over nothing, saying its observation has not begun — and the
// recording goes on to finish normally.
func TestQueryWhileRecording(t *testing.T) {
	bin := binary(t)
	dbDir := filepath.Join(t.TempDir(), "live.db")
	rec := exec.Command(bin, "record", "--demo", "--duration", "6s", "--db", dbDir, "--sync", "100ms")
	var recErr strings.Builder
	rec.Stderr = &recErr
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	defer rec.Process.Kill()
	q := "range of p is Process retrieve (p.Process, p.State)"
	// The first query as soon as the database exists: most often before
	// the recorder's first commit.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dbDir, "TQMON")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no database after 10 s: %s", recErr.String())
		}
	}
	answers := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && answers < 3; time.Sleep(300 * time.Millisecond) {
		cmd := exec.Command(bin, "query", "--db", dbDir, "-e", q, "--format", "csv")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("query while recording: %v: %s", err, stderr.String())
		}
		note := stderr.String()
		if !strings.Contains(note, "is being recorded: answering over what it has committed (observed ") &&
			!strings.Contains(note, "is being recorded: answering over what it has committed (nothing observed yet") {
			t.Fatalf("query while recording does not say so, with its window: %q", note)
		}
		if strings.Count(string(out), "\n") > 2 {
			answers++
		}
	}
	if answers < 3 {
		t.Fatalf("%d answers while recording", answers)
	}
	if err := rec.Wait(); err != nil {
		t.Fatalf("the recording, queried: %v\n%s", err, recErr.String())
	}
	if code, _, stderr := tqmon(t, "query", "--db", dbDir, "-e", q); code != 0 || strings.Contains(stderr, "being recorded") {
		t.Errorf("query after the recording: %d %s", code, stderr)
	}
}
