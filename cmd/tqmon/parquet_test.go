package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRecordJournalToParquet: a demo recorded into a journal on tqmon
// serve (record --journal) while record --from-journal writes it as
// Parquet files; that writer is interrupted mid-run and run again, and
// resumes: the paper's queries over its files (query --parquet) answer
// as over the demo's ground truth.
func TestRecordJournalToParquet(t *testing.T) {
	if testing.Short() {
		t.Skip("records for 2 s")
	}
	bin := binary(t)
	dir := t.TempDir()
	url := startServe(t, bin)
	truthDir, pqDir := filepath.Join(dir, "truth"), filepath.Join(dir, "pq")
	rec := exec.Command(bin, "record", "--demo", "--seed", "4", "--duration", "2s", "--journal", url, "--record-host", "h1",
		"--truth", truthDir, "--allow-loss")
	var recErr strings.Builder
	rec.Stderr = &recErr
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	defer rec.Process.Kill()
	consume := func() *exec.Cmd {
		return exec.Command(bin, "record", "--from-journal", url, "--record-host", "h1", "--parquet", pqDir, "--parquet-every", "5s")
	}
	first := consume()
	var firstErr strings.Builder
	first.Stderr = &firstErr
	time.Sleep(500 * time.Millisecond) // the journal's stream exists once record has started
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(800 * time.Millisecond)
	first.Process.Signal(os.Interrupt)
	if err := first.Wait(); err != nil || !strings.Contains(firstErr.String(), "resume") {
		t.Fatalf("the interrupted writer: %v\n%s", err, firstErr.String())
	}
	if err := rec.Wait(); err != nil {
		t.Fatalf("record --journal: %v\n%s", err, recErr.String())
	}
	if out, err := consume().CombinedOutput(); err != nil || !strings.Contains(string(out), "wrote the journal of h1") {
		t.Fatalf("the resumed writer: %v\n%s", err, out)
	}
	// --stats says which files a query read.
	if code, _, stderr := tqmon(t, "query", "--parquet", pqDir, "--stats", "-e", "range of p is Process retrieve (p.Process)"); code != 0 ||
		!strings.Contains(stderr, "files read: ") || !strings.Contains(stderr, "read Process whole") {
		t.Errorf("query --parquet --stats: exit %d\n%s", code, stderr)
	}
	// The shell reads the files too.
	script := filepath.Join(dir, "s.tq")
	os.WriteFile(script, []byte("range of p is Process retrieve (p.Process, p.State);\n"), 0o644)
	code, out, stderr := tqmon(t, "shell", "--parquet", pqDir, "-f", script, "--history-file", "", "--format", "csv")
	_, want, _ := tqmon(t, "query", "--history", truthDir, "-f", script, "--format", "csv")
	if code != 0 || out != want {
		t.Errorf("shell --parquet: exit %d\n%s%s\nwant\n%s", code, out, stderr, want)
	}
	for _, q := range []string{"01-running-on", "02-send-to-waiter", "03-end-of-wait", "04-resumed", "05-waiting-while-running"} {
		f := filepath.Join(root, "testdata", "tquel", q+".tq")
		_, overPQ, stderr := tqmon(t, "query", "--parquet", pqDir, "-f", f, "--format", "csv", "--time-format", "ns")
		_, overTruth, _ := tqmon(t, "query", "--history", truthDir, "-f", f, "--format", "csv", "--time-format", "ns")
		if overPQ != overTruth || strings.Count(overTruth, "\n") < 2 {
			t.Errorf("%s: over the Parquet files\n%s%s\nover the truth\n%s", q, overPQ, stderr, overTruth)
		}
	}
}
