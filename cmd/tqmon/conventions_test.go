package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/query"
)

// TestVersion: --version names the module version, commit, time,
// modification and the Go that built it (internal/cli's TestVersion
// checks the fields from a stamped build).
func TestVersion(t *testing.T) {
	code, out, errs := tqmon(t, "--version")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"tqmon ", "\ncommit:", "\ntime:", "\nmodified:", "\ngo:       " + runtime.Version() + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("--version lacks %q:\n%s", want, out)
		}
	}
}

// TestVersionStamped: a build without VCS information (-buildvcs=false,
// as .ci/run builds) still names its commit: the Makefile's build stamps
// it with the linker.
func TestVersionStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tqmon")
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("skipping: not a git checkout (%v)", err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("skipping: no make")
	}
	bin := filepath.Join(t.TempDir(), "tqmon")
	mk := exec.Command("make", "-s", "-C", root, "tqmon", "BIN="+bin)
	mk.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make tqmon: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "\ncommit:   " + strings.TrimSpace(string(head)) + "\n"; !strings.Contains(string(out), want) {
		t.Errorf("--version of a -buildvcs=false build lacks %q:\n%s", want, out)
	}
	if strings.Contains(string(out), "unknown\ntime") || !strings.Contains(string(out), "\nmodified: ") {
		t.Errorf("--version:\n%s", out)
	}
}

func TestDidYouMean(t *testing.T) {
	code, _, errs := tqmon(t, "query", "--hist", paper, "-e", "x")
	if code != exitUsage || !strings.Contains(errs, "unknown flag: --hist (did you mean --history?)") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	code, _, errs = tqmon(t, "shell", "--formt", "csv")
	if code != exitUsage || !strings.Contains(errs, "did you mean --format?") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

// TestFlagValueCompletion: --format, --time-format and --plan complete
// to their values, and each value offered is one the flag accepts.
func TestFlagValueCompletion(t *testing.T) {
	for flag, vals := range flagValues() {
		for _, v := range vals {
			var err error
			switch flag {
			case "format":
				_, err = format.ParseKind(v)
			case "time-format":
				_, err = algebra.ParseTimeFormat(v)
			case "plan":
				_, err = query.ParsePlan(v)
			}
			if err != nil {
				t.Errorf("--%s offers %q: %v", flag, v, err)
			}
		}
		code, out, _ := tqmon(t, cobra.ShellCompRequestCmd, "query", "--"+flag, "")
		if code != 0 || !strings.HasPrefix(out, strings.Join(vals, "\n")+"\n:4\n") {
			t.Errorf("completing --%s: exit %d\n%s", flag, code, out)
		}
	}
}

func TestManPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man")
	if code, _, errs := tqmon(t, "man", "--dir", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	page, err := os.ReadFile(filepath.Join(dir, "tqmon-query.1"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `.TH "TQMON" "1"`) || !strings.Contains(string(page), "time-format") {
		t.Errorf("tqmon-query.1:\n%.400s", page)
	}
	if code, _, errs := tqmon(t, "man"); code != exitUsage || !strings.Contains(errs, "--dir") {
		t.Errorf("man without --dir: exit %d, %s", code, errs)
	}
}

func TestTargetShorthand(t *testing.T) {
	for _, name := range []string{"query", "record", "shell"} {
		cmd, _, err := newRoot(nil, nil).Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		if f := cmd.Flags().ShorthandLookup("p"); f == nil || f.Name != "target" {
			t.Errorf("%s: -p is %v, want --target", name, f)
		}
	}
	// -p goes with --kernel, as --target does.
	if code, _, errs := tqmon(t, "query", "--history", paper, "-p", "1", "-e", "x"); code != exitUsage || !strings.Contains(errs, "--target") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// TestExplainHonoured: --explain prints the plan and runs nothing, with
// --connect and with a display alike (it used to start the display).
func TestExplainHonoured(t *testing.T) {
	bin := binary(t)
	sock := filepath.Join(t.TempDir(), "subject.sock")
	startSubject(t, bin, sock, "--duration", "30s")
	q := `range of s is SendMessage retrieve (s.Process, s.Mailbox)`
	for _, extra := range [][]string{nil, {"--display", filepath.Join(paper, "os.display")}} {
		args := append([]string{"query", "--connect", sock, "--explain", "-e", q}, extra...)
		cmd := exec.Command(bin, args...)
		cmd.Stdin = nil // no terminal: a display would fail, a run would print rows
		start := time.Now()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v\n%s", extra, err, out)
		}
		if !strings.Contains(string(out), "SendMessage") || time.Since(start) > 20*time.Second {
			t.Errorf("%v: took %v, output:\n%s", extra, time.Since(start), out)
		}
	}
}

// TestDemoSubjectEndsUnwatched: a subject given --duration (or
// --wait-limit) ends once it has passed with no monitor, instead of
// waiting for one forever; --wait-limit 0 waits.
func TestDemoSubjectEndsUnwatched(t *testing.T) {
	bin := binary(t)
	for _, c := range []struct {
		args []string
		ends bool
	}{
		{[]string{"--duration", "1s"}, true},
		{[]string{"--duration", "60s", "--wait-limit", "500ms"}, true},
		{[]string{"--duration", "1s", "--wait-limit", "0"}, false},
	} {
		sock := filepath.Join(t.TempDir(), "subject.sock")
		cmd := exec.Command(bin, append([]string{"demo", "--subject", "--listen", sock}, c.args...)...)
		done := make(chan error, 1)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		limit := 60 * time.Second
		if !c.ends {
			limit = 3 * time.Second
		}
		select {
		case err := <-done:
			if !c.ends {
				t.Errorf("%v: ended unwatched: %v %s", c.args, err, stderr.String())
			} else if err != nil || !strings.Contains(stderr.String(), "ending unwatched") {
				t.Errorf("%v: %v: %s", c.args, err, stderr.String())
			}
		case <-time.After(limit):
			cmd.Process.Kill()
			<-done
			if c.ends {
				t.Errorf("%v: still waiting for a monitor after %v: %s", c.args, limit, stderr.String())
			}
		}
	}
}

// TestExplainPlacementCost: --explain over a live subject says why a
// program is or is not placed at its resident (the rule "placement
// cost"), with the probe's rates: a running count of the sends sends a
// result per send and stays at the monitor; a count of waits by mailbox
// is placed and spares the packets.
func TestExplainPlacementCost(t *testing.T) {
	bin := binary(t)
	sock := filepath.Join(t.TempDir(), "subject.sock")
	startSubject(t, bin, sock, "--duration", "30s")
	for _, c := range []struct{ q, want, rate string }{
		{`range of s is SendMessage retrieve (s.Process, N = count(s.Mailbox by s.Process for ever))`,
			"at the monitor: placing does not pay: statement 1 a result per packet of α s (SendMessage)", "results/s (1 statement(s) with a result per packet)"},
		{`range of m is Mailbox range of w is Waiting retrieve (m.Mailbox, Length = count(w.Process by m.Mailbox where w.Mailbox = m.Mailbox))`,
			"every operator at the resident", "spared by placing"},
	} {
		out, err := exec.Command(bin, "query", "--connect", sock, "--explain", "-e", c.q).Output()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !strings.Contains(string(out), c.want) || !strings.Contains(string(out), c.rate) {
			t.Errorf("--explain does not say %q and %q:\n%s", c.want, c.rate, out)
		}
	}
}
