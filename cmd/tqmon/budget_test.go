package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/internal/testkit"
)

// TestMaxMemoryStopsQuery: a 6-variable self-join, whose pending bindings
// grow without bound, stops within seconds under --max-memory 64MiB with
// exit status 1 and a message naming the budget, the join and its
// statement — over a history and over a database. (The run needs well
// under a second of CPU; the bound on its time is loose for loaded
// machines.)
func TestMaxMemoryStopsQuery(t *testing.T) {
	dir := testkit.RunawayHistory(t, 200)
	q := filepath.Join(t.TempDir(), "six.tq")
	if err := os.WriteFile(q, []byte(testkit.SixWayJoin), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "busy.db")
	if code, _, errs := tqmon(t, "import", "--history", dir, "--db", db); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errs)
	}
	for _, subject := range [][]string{{"query", "--history", dir}, {"replay", "--max", "--db", db}} {
		start := time.Now()
		code, out, errs := tqmon(t, append(subject, "-f", q, "--max-memory", "64MiB")...)
		took := time.Since(start)
		t.Logf("%v: %s in %v", subject, strings.TrimSpace(errs), took)
		if code != 1 {
			t.Fatalf("%v: exit %d, want 1; stdout %d bytes, stderr:\n%s", subject, code, len(out), errs)
		}
		for _, want := range []string{"query stopped: memory budget 64.0 MiB exceeded", "join of a, b, c, d, e, f in Six (" + q + ":7:1) holds", "pending bindings"} {
			if !strings.Contains(errs, want) {
				t.Errorf("%v: stderr lacks %q:\n%s", subject, want, errs)
			}
		}
		if took > 30*time.Second {
			t.Errorf("%v: stopped after %v", subject, took)
		}
	}
}

// TestMaxMemoryFlag: the default budget leaves a normal query alone, 0
// means none, and a size that does not parse is a usage error.
func TestMaxMemoryFlag(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(paper, "resumed_by_p1.expected.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, flags := range [][]string{nil, {"--max-memory", "0"}, {"--max-memory", "512MiB"}, {"--max-memory", "2GB"}} {
		args := append([]string{"query", "--history", paper, "-f", filepath.Join(paper, "resumed_by_p1.tq"), "--format", "csv"}, flags...)
		code, out, errs := tqmon(t, args...)
		if code != 0 || errs != "" || out != string(want) {
			t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", flags, code, errs, out)
		}
	}
	code, _, errs := tqmon(t, "query", "--history", paper, "-e", "retrieve (x = 1)", "--max-memory", "lots")
	if code != 2 || !strings.Contains(errs, `size "lots"`) {
		t.Errorf("--max-memory lots: exit %d, stderr %q", code, errs)
	}
}

// fourWayJoin is a 4-variable self-join of Process whose bindings
// multiply over testkit.RunawayHistory, as SixWayJoin's do.
const fourWayJoin = `range of a is Process
range of b is Process
range of c is Process
range of d is Process
retrieve Four (P = a.Process)
where a.State = b.State and b.State = c.State and c.State = d.State
`

// TestDisplayBudget: the animated display runs within --max-memory like
// every other query — a runaway 4-variable self-join shown in the display
// stops with the budget's message and exit status 1, the terminal
// restored, played from a history (view) and from a database (replay
// --display). Before, the display's network had no budget and ran on.
func TestDisplayBudget(t *testing.T) {
	bin := binary(t)
	dir := testkit.RunawayHistory(t, 400)
	q := filepath.Join(t.TempDir(), "four.tq")
	if err := os.WriteFile(q, []byte(fourWayJoin), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(t.TempDir(), "four.display")
	if err := os.WriteFile(spec, []byte("display Process as circle label Process\ndisplay Four as flash P\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "busy.db")
	if code, _, errs := tqmon(t, "import", "--history", dir, "--db", db); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errs)
	}
	for _, subject := range []string{"view --history " + dir + " --speed 1e9", "replay --db " + db + " --max"} {
		s := newTmux(t, 100, 30, fmt.Sprintf("%s %s --display %s -f %s --max-memory 1MiB", bin, subject, spec, q))
		scr := s.waitScreen("the display to stop", 30*time.Second, func(scr string) bool {
			return strings.Contains(scr, "EXIT=") && strings.Contains(scr, "icanon")
		})
		scr = s.exited(1)
		if !strings.Contains(strings.ReplaceAll(scr, "\n", ""), "query stopped: memory budget 1.0 MiB exceeded") {
			t.Errorf("%s: no budget message:\n%s", subject, scr)
		}
	}
}
