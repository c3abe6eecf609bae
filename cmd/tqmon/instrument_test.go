package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestInstrumentExample: the program of docs/instrument.md builds (into a
// temporary directory, never the source tree), serves its sensors with
// the one call the doc shows, and tqmon queries it live and records it.
func TestInstrumentExample(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "jobs")
	build := exec.Command("go", "build", "-o", prog, "./docs/examples/instrument")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	sock := filepath.Join(dir, "jobs.sock")
	jobs := exec.Command(prog, "-listen", sock, "-duration", "60s")
	var jobsErr strings.Builder
	jobs.Stderr = &jobsErr
	if err := jobs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jobs.Process.Kill(); jobs.Wait() })
	waitFor(t, "the program's socket", 10*time.Second, func() bool { return strings.Contains(jobsErr.String(), "serving monitors") })

	tq := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tqmon %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	runs := `range of r is Runs retrieve (r.Job, r.Worker)`
	live := tq("query", "--connect", sock, "--duration", "1500ms", "--format", "csv", "-e", runs)
	if !strings.HasPrefix(live, "Job,Worker,from,to\n") || !strings.Contains(live, ",W1,") || !strings.Contains(live, "\nJ") {
		t.Errorf("live query:\n%s", live)
	}
	sizes := `range of s is Submitted retrieve (s.Job, s.Size) where s.Size = 4`
	if out := tq("query", "--connect", sock, "--duration", "1s", "--format", "csv", "-e", sizes); strings.Count(out, ",4,") < 2 {
		t.Errorf("events:\n%s", out)
	}
	db := filepath.Join(dir, "jobs.db")
	tq("record", "--connect", sock, "--db", db, "--duration", "1500ms", "--relations", "Runs,Submitted")
	rec := tq("query", "--db", db, "--format", "csv", "-e", runs)
	if strings.Count(rec, "\n") < 5 || !strings.Contains(rec, ",W2,") {
		t.Errorf("recorded:\n%s", rec)
	}
}
