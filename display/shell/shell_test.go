package shell

import (
	"bytes"
	"context"
	"errors"
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
	if err := Run(Config{Subject: sub, Output: format.Options{Kind: format.CSV, Time: algebra.TimeClock}}, strings.NewReader(script), &out, &errb); !errors.Is(err, ErrFailed) {
		t.Fatalf("a script with a failed statement: %v, want ErrFailed", err)
	}
	if !strings.Contains(errb.String(), "query stopped: memory budget 64.0 MiB exceeded") || !strings.Contains(errb.String(), "join of a, b, c, d, e, f in Six") {
		t.Errorf("stderr:\n%s", errb.String())
	}
	if !strings.HasPrefix(out.String(), "N,from,to\n") {
		t.Errorf("the next statement did not run; stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
}

// runScript runs script over the paper's history, as a pipe would.
func runScript(t *testing.T, script string, o format.Options) (string, string, error) {
	t.Helper()
	sub, err := subject.Open(context.Background(), subject.Options{History: paper})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var out, errb bytes.Buffer
	err = Run(Config{Subject: sub, Output: o, Getenv: func(string) string { return "" }}, strings.NewReader(script), &out, &errb)
	return out.String(), errb.String(), err
}

// TestShellScriptExit: a script whose statements all run returns nil; one
// with a failure anywhere — a syntax error, a semantic one, an unknown
// command, a bad argument — runs to its end and returns ErrFailed.
func TestShellScriptExit(t *testing.T) {
	csv := format.Options{Kind: format.CSV}
	good := "range of p is Process\nretrieve (p.Process) where p.Process = \"P1\";\n\\format table\n"
	if _, errs, err := runScript(t, good, csv); err != nil || errs != "" {
		t.Fatalf("a good script: %v\n%s", err, errs)
	}
	for _, bad := range []string{"retrieve (;\n", "retrieve (q.Nope);\n", "\\nosuch\n", "\\format xml\n", "\\x maybe\n", "\\pset border 2\n"} {
		out, errs, err := runScript(t, bad+good, csv)
		if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "1 statement(s) or command(s) failed") {
			t.Errorf("%q: %v, want ErrFailed for 1", bad, err)
		}
		if !strings.Contains(out, "P1") || errs == "" {
			t.Errorf("%q: the script did not run on, or said nothing: out %q, stderr %q", bad, out, errs)
		}
		if strings.Contains(errs, "\x1b[") {
			t.Errorf("%q: colour in a script's errors: %q", bad, errs)
		}
	}
}

// TestShellScriptErrors: each error of a script is reported where it is
// (the statement's number, line and column), in order, and counted.
func TestShellScriptErrors(t *testing.T) {
	script := "retrieve (x.A);\nrange of p is Process\n\nretrieve (p.Nope);\nretrieve (p.Process) where p.Process = \"P2\";\n"
	out, errs, err := runScript(t, script, format.Options{Kind: format.CSV})
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "2 statement(s)") {
		t.Errorf("err %v", err)
	}
	first, second := strings.Index(errs, "[1]:1:"), strings.Index(errs, "[3]:1:13")
	if first < 0 || second < first || !strings.Contains(errs, "Nope") {
		t.Errorf("stderr:\n%s", errs)
	}
	if !strings.Contains(out, "P2") {
		t.Errorf("the last statement did not run: %q", out)
	}
}

// TestShellMetaOutput: \?, \x, \o FILE, \pset pager and exit do what
// \help says.
func TestShellMetaOutput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out.txt")
	q := "range of p is Process\nretrieve (p.Process) where p.Process = \"P1\" and p.State = \"Running\";\n"
	script := "\\?\n\\x\n" + q + "\\x off\n\\o " + file + "\n" + q + "\\o\n\\pset pager off\n\\pset pager\nexit\n" + q
	out, errs, err := runScript(t, script, format.Options{Kind: format.Table})
	if err != nil || errs != "" {
		t.Fatalf("%v\n%s", err, errs)
	}
	for _, want := range []string{"Meta commands:", `\x [on|off]`, "Expanded display is on.", "-[ RECORD 1 ]", "Process | P1\n",
		"Expanded display is off.", "Output goes to " + file, "Output goes to the standard output.", "Pager is off.", "Pager is on."} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, " Process | "); n != 0 {
		t.Errorf("the table went to stdout, not the file:\n%s", out)
	}
	if strings.Count(out, "RECORD 1") != 1 {
		t.Errorf("the statement after exit ran:\n%s", out)
	}
	data, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(data), " Process | from") || strings.Contains(string(data), "Output goes") {
		t.Errorf("\\o's file: %v\n%s", err, data)
	}
}
