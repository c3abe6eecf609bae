package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// term is a program running on a pseudo-terminal, as a person would use
// it: what it prints accumulates, and the test types at it.
type pterm struct {
	t    *testing.T
	cmd  *exec.Cmd
	f    *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	mark int // Expect searches output after this offset
	done chan struct{}
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]|\r`)

func startTerm(t *testing.T, name string, args ...string) *pterm {
	t.Helper()
	return startTermEnv(t, nil, 50, name, args...)
}

// startTermEnv is startTerm with more environment (later settings win)
// and a terminal of rows lines.
func startTermEnv(t *testing.T, env []string, rows uint16, name string, args ...string) *pterm {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = root // relative paths are the repository's, as in the README
	cmd.Env = append(append(os.Environ(), "TERM=xterm", "HOME="+t.TempDir()), env...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	tm := &pterm{t: t, cmd: cmd, f: f, done: make(chan struct{})}
	go func() {
		defer close(tm.done)
		buf := make([]byte, 4096)
		answered := 0
		for {
			n, err := f.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:n])
			// Answer cursor-position queries as a terminal does (line
			// editors ask before drawing the prompt).
			asked := strings.Count(tm.out.String(), "\x1b[6n")
			tm.mu.Unlock()
			for ; answered < asked; answered++ {
				io.WriteString(f, "\x1b[1;1R")
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
	})
	return tm
}

// text is what the terminal showed since the last mark, without escape
// sequences.
func (tm *pterm) text() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return ansi.ReplaceAllString(tm.out.String()[tm.mark:], "")
}

func (tm *pterm) all() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return ansi.ReplaceAllString(tm.out.String(), "")
}

// expect waits until every pattern has appeared since the last mark,
// then moves the mark to the end.
func (tm *pterm) expect(d time.Duration, patterns ...string) {
	tm.t.Helper()
	deadline := time.Now().Add(d)
	for {
		txt := tm.text()
		missing := ""
		for _, p := range patterns {
			if !strings.Contains(txt, p) {
				missing = p
				break
			}
		}
		if missing == "" {
			tm.mu.Lock()
			tm.mark = tm.out.Len()
			tm.mu.Unlock()
			return
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("timed out waiting for %q; the terminal shows:\n%s", missing, tm.all())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (tm *pterm) typeText(s string) {
	tm.t.Helper()
	if _, err := io.WriteString(tm.f, s); err != nil {
		tm.t.Fatal(err)
	}
}

// exit waits for the program to end and returns its exit code.
func (tm *pterm) exit(d time.Duration) int {
	tm.t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- tm.cmd.Wait() }()
	select {
	case err := <-errc:
		// The program has ended, but what it wrote last may still be on
		// its way through the terminal: wait until the reader has it all
		// (the read ends when no process holds the terminal any more), for
		// a while at most, since a child left running may still hold it.
		select {
		case <-tm.done:
		case <-time.After(2 * time.Second):
		}
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			tm.t.Fatal(err)
		}
		return 0
	case <-time.After(d):
		tm.t.Fatalf("did not exit; the terminal shows:\n%s", tm.all())
	}
	return -1
}

// TestShellOnPaperHistory drives tqmon shell through a pseudo-terminal as
// a person would: \d, tab completion of a relation name, ResumedbyP1 typed
// over several lines, a syntax error that leaves the session going,
// \explain, \q.
func TestShellOnPaperHistory(t *testing.T) {
	bin := binary(t)
	tm := startTerm(t, bin, "shell", "--history", paper)
	tm.expect(10*time.Second, "tqmon shell", "tqmon=> ")

	tm.typeText(`\d` + "\r")
	tm.expect(5*time.Second, "SendMessage", "RunningOn", "Waiting", "Processor", "Mailbox", "Observed", "Lost", "(8 rows)", "tqmon=> ")

	tm.typeText("range of S is SendM\t")
	tm.expect(5*time.Second, "range of S is SendMessage")
	tm.typeText("\r")
	tm.expect(5*time.Second, "tqmon-> ")
	for _, l := range []string{
		"range of W is Waiting",
		"retrieve ResumedbyP1 (Process = W.Process)",
		"valid at end of W",
		`where S.Mailbox = W.Mailbox and S.Process = "P1"`,
		"when S precede end of W;",
	} {
		tm.typeText(l + "\r")
	}
	tm.expect(5*time.Second, "ResumedbyP1", "P2", "2:54:20", "(1 tuple)", "tqmon=> ")

	tm.typeText("retrieve (S.Mailbox where S.Process = P1;\r")
	tm.expect(5*time.Second, "^", "tqmon=> ")
	if !strings.Contains(tm.all(), "[") {
		t.Fatalf("no positioned error:\n%s", tm.all())
	}
	// The session goes on: the ranges are still declared.
	tm.typeText(`retrieve (S.Mailbox) where S.Process = "P2";` + "\r")
	tm.expect(5*time.Second, "M1", "M3", "M5", "(3 tuples)")

	tm.typeText(`\explain retrieve (S.Mailbox) where S.Process = "P1"` + "\r")
	tm.expect(5*time.Second, "final plan:", "α[T:I] S", "P1", "alpha-flag-select")

	// The animated view of the session's results, and back.
	tm.typeText(`\view 600` + "\r")
	tm.expect(10*time.Second, "M7", "P1", "tqmon shell")
	tm.typeText("q")
	tm.expect(10*time.Second, "tqmon=> ")
	tm.typeText(`retrieve (S.Mailbox) where S.Process = "P1";` + "\r")
	tm.expect(5*time.Second, "M3", "M4", "M7", "(3 tuples)")

	tm.typeText(`\q` + "\r")
	if code := tm.exit(5 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestShellLiveDemo: with the demo system running inside the shell, a
// query streams results until Ctrl-C stops it — the query, not the shell
// — and a second query runs.
func TestShellLiveDemo(t *testing.T) {
	bin := binary(t)
	tm := startTerm(t, bin, "shell", "--demo")
	tm.expect(10*time.Second, "the demo system", "tqmon=> ")

	tm.typeText("range of s is SendMessage retrieve (s.Process, s.Mailbox);\r")
	tm.expect(10*time.Second, "running live", "Process", "Mailbox", "P1")
	tm.typeText("\x03") // Ctrl-C
	tm.expect(10*time.Second, "tqmon=> ")

	tm.typeText(`retrieve (Sends = count(s.Process for ever));` + "\r")
	tm.expect(10*time.Second, "running live", "Sends")
	time.Sleep(300 * time.Millisecond)
	tm.typeText("\x03")
	tm.expect(10*time.Second, "tqmon=> ")

	tm.typeText(`\sensors` + "\r")
	tm.expect(5*time.Second, "SendMessage", "packets received")
	if os.Getenv("TQMON_SHOW_TERM") != "" {
		t.Log(tm.all())
	}
	tm.typeText(`\q` + "\r")
	if code := tm.exit(10 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestReplayDisplayInTerminal: a database replayed into the animated view
// (the paper's history imported, the paper's spec): the picture appears,
// q ends it cleanly.
func TestReplayDisplayInTerminal(t *testing.T) {
	bin := binary(t)
	dbDir := filepath.Join(t.TempDir(), "paper.db")
	if out, err := exec.Command(bin, "import", "--history", paper, "--db", dbDir).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	tm := startTerm(t, bin, "replay", "--db", dbDir, "--display", filepath.Join(paper, "os.display"),
		"-f", filepath.Join(paper, "resumed_by_p1.tq"), "--speed", "600", "--from", "2:44:00")
	tm.expect(10*time.Second, "tqmon replay", "M7", "P2", "A")
	tm.typeText("q")
	if code := tm.exit(10 * time.Second); code != 0 {
		t.Fatalf("exit %d; the terminal shows:\n%s", code, tm.all())
	}
}

// TestShellDBAndRecord: a session over a database (the paper's history
// imported) records its named results with \record; the recorded
// relation is then queried like any other.
func TestShellDBAndRecord(t *testing.T) {
	dir := t.TempDir()
	dbDir, recDir := filepath.Join(dir, "paper.db"), filepath.Join(dir, "results.db")
	if code, _, errs := tqmon(t, "import", "--history", paper, "--db", dbDir); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, errs)
	}
	script, err := os.ReadFile(filepath.Join(paper, "resumed_by_p1.tq"))
	if err != nil {
		t.Fatal(err)
	}
	in := `\record ` + recDir + "\n" + string(script) + "\n"
	var out, errb bytes.Buffer
	if err := runShell(&shellFlags{dbDir: dbDir, format: "csv", timeFormat: "clock"}, strings.NewReader(in), &out, &errb); err != nil || errb.Len() > 0 {
		t.Fatalf("error %v, stderr:\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "P2,2:54:20") {
		t.Fatalf("no result:\n%s", out.String())
	}
	code, got, errs := tqmon(t, "query", "--db", recDir, "--format", "csv", "-e", "range of r is ResumedbyP1 retrieve (r.Process)")
	if code != 0 {
		t.Fatalf("query the recording: exit %d\n%s", code, errs)
	}
	if got != "Process,at\nP2,2:54:20\n" {
		t.Errorf("recorded ResumedbyP1:\n%s", got)
	}
}

// raw is everything the terminal received, escapes included.
func (tm *pterm) raw() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

// TestShellTerminalConventions: on a terminal, \? helps, a result taller
// than the terminal goes through $PAGER, errors are red, \x expands, a
// statement typed over several lines is one history entry, exit quits.
func TestShellTerminalConventions(t *testing.T) {
	bin := binary(t)
	hist := filepath.Join(t.TempDir(), "history")
	tm := startTermEnv(t, []string{"PAGER=sed s/^/PAGED:/", "NO_COLOR="}, 6, bin, "shell", "--history", paper, "--history-file", hist)
	tm.expect(10*time.Second, "tqmon shell", "tqmon=> ")
	tm.typeText(`\?` + "\r")
	tm.expect(5*time.Second, "Meta commands:", `\pset pager [on|off]`, "tqmon=> ")

	// Taller than 6 lines: paged. Typed over three lines.
	tm.typeText("range of S is SendMessage\r")
	tm.typeText("retrieve (S.Process, S.Mailbox)\r")
	tm.typeText(";\r")
	tm.expect(5*time.Second, "PAGED: Process | Mailbox", "PAGED:(", "tqmon=> ")
	// Short: not paged.
	tm.typeText(`retrieve (S.Mailbox) where S.Process = "P2" and S.Mailbox = "M1";` + "\r")
	tm.expect(5*time.Second, " M1 ", "(1 tuple)", "tqmon=> ")
	if strings.Contains(tm.all()[strings.LastIndex(tm.all(), "M1\""):], "PAGED:") {
		t.Errorf("a one-row result was paged:\n%s", tm.all())
	}
	tm.typeText(`\pset pager off` + "\r")
	tm.expect(5*time.Second, "Pager is off.")
	tm.typeText(`retrieve (S.Process, S.Mailbox);` + "\r")
	tm.expect(5*time.Second, "tuples)", "tqmon=> ")
	if strings.Contains(tm.all()[strings.LastIndex(tm.all(), "Pager is off."):], "PAGED:") {
		t.Errorf("paged with the pager off:\n%s", tm.all())
	}

	tm.typeText("retrieve (S.Nope);\r")
	tm.expect(5*time.Second, "no attribute Nope", "tqmon=> ")
	if !strings.Contains(tm.raw(), "\x1b[31m") {
		t.Errorf("the error is not red:\n%q", tm.raw())
	}
	tm.typeText(`\x` + "\r")
	tm.typeText(`retrieve (S.Mailbox) where S.Process = "P2" and S.Mailbox = "M1";` + "\r")
	tm.expect(5*time.Second, "Expanded display is on.", "-[ RECORD 1 ]", "Mailbox | M1", "tqmon=> ")
	tm.typeText("exit\r")
	if code := tm.exit(5 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	data, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	h := string(data)
	if !strings.Contains(h, "range of S is SendMessage retrieve (S.Process, S.Mailbox) ;\n") || strings.Contains(h, "\n;\n") ||
		!strings.Contains(h, "\\x\n") || !strings.HasSuffix(h, "exit\n") {
		t.Errorf("history is not one entry per statement:\n%s", h)
	}
}

// TestShellNoColor: NO_COLOR (any value) or TERM=dumb keeps errors
// uncoloured on a terminal.
func TestShellNoColor(t *testing.T) {
	bin := binary(t)
	for _, env := range [][]string{{"NO_COLOR=1"}, {"NO_COLOR=", "TERM=dumb"}} {
		tm := startTermEnv(t, env, 50, bin, "shell", "--history", paper, "--history-file", "")
		tm.expect(10*time.Second, "tqmon=> ")
		tm.typeText("retrieve (x.A);\r")
		tm.expect(5*time.Second, "unknown range variable x", "tqmon=> ")
		tm.typeText(`\q` + "\r")
		if code := tm.exit(5 * time.Second); code != 0 {
			t.Fatalf("%v: exit %d", env, code)
		}
		if strings.Contains(tm.raw(), "\x1b[31m") {
			t.Errorf("%v: a red error:\n%q", env, tm.raw())
		}
	}
}

// TestShellScriptExitCode: tqmon shell with a script on stdin exits 1
// when a statement in it failed, 0 otherwise.
func TestShellScriptExitCode(t *testing.T) {
	bin := binary(t)
	for script, want := range map[string]int{
		"range of p is Process\nretrieve (p.Process);\n":                  0,
		"retrieve (x.A);\nrange of p is Process\nretrieve (p.Process);\n": 1,
	} {
		cmd := exec.Command(bin, "shell", "--history", paper, "--history-file", "")
		cmd.Stdin = strings.NewReader(script)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != want {
			t.Errorf("%q: exit %d, want %d\n%s", script, code, want, out)
		}
	}
}
