package shell

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/subject"
)

const paper = "../../testdata/paper"

// TestShellScript: statements piped in run without prompts, like a file.
func TestShellScript(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(paper, "resumed_by_p1.tq"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := subject.Open(context.Background(), subject.Options{History: paper})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var out, errb bytes.Buffer
	code := Run(Config{Subject: sub, Output: format.Options{Kind: format.CSV, Time: algebra.TimeClock}}, bytes.NewReader(script), &out, &errb)
	if code != nil || errb.Len() > 0 {
		t.Fatalf("error %v, stderr:\n%s", code, errb.String())
	}
	want, _ := os.ReadFile(filepath.Join(paper, "resumed_by_p1.expected.csv"))
	if out.String() != string(want) {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestShellMemoryBudget: a statement stopped by the subject's memory
// budget is reported, and the shell goes on to the next.
func TestShellMemoryBudget(t *testing.T) {
	sub, err := subject.Open(context.Background(), subject.Options{History: testkit.RunawayHistory(t, 200), MaxMemory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	script := testkit.SixWayJoin + "\nretrieve Count (N = count(a.Process))\n"
	var out, errb bytes.Buffer
	if err := Run(Config{Subject: sub, Output: format.Options{Kind: format.CSV, Time: algebra.TimeClock}}, strings.NewReader(script), &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "query stopped: memory budget 64.0 MiB exceeded") || !strings.Contains(errb.String(), "join of a, b, c, d, e, f in Six") {
		t.Errorf("stderr:\n%s", errb.String())
	}
	if !strings.HasPrefix(out.String(), "N,from,to\n") {
		t.Errorf("the next statement did not run; stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
}
