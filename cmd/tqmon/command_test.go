package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
)

// syscallCounts counts the names in a CSV of (Name,at) rows.
func syscallCounts(t *testing.T, csv string) map[string]int {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "Name,") {
		t.Fatalf("not the expected CSV:\n%s", csv)
	}
	n := map[string]int{}
	for _, l := range lines[1:] {
		name, _, _ := strings.Cut(l, ",")
		n[name]++
	}
	return n
}

// straceCounts is the reference: the system calls strace -f sees argv
// make, by name, without the execve that starts it (tqmon's -c begins
// after the exec, as its --help says).
func straceCounts(t *testing.T, argv ...string) map[string]int {
	t.Helper()
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("skipping: no strace for the reference counts (.ci/run installs it)")
	}
	out := filepath.Join(t.TempDir(), "strace")
	if b, err := exec.Command("strace", append([]string{"-f", "-qq", "-o", out, "--"}, argv...)...).CombinedOutput(); err != nil {
		t.Fatalf("strace: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	n := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		// "PID name(...) = r"; "PID <... name resumed>" lines continue
		// a call already counted.
		_, l, _ = strings.Cut(l, " ")
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "<...") || strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---") {
			continue
		}
		name, _, ok := strings.Cut(l, "(")
		if !ok {
			continue
		}
		n[name]++
	}
	n["execve"]--
	if n["execve"] == 0 {
		delete(n, "execve")
	}
	return n
}

func countsText(n map[string]int) string {
	var names []string
	for k := range n {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		b.WriteString(k + "=" + itoa(n[k]) + " ")
	}
	return b.String()
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		n /= 10
		if n == 0 {
			return s
		}
	}
}

// TestKernelCommandExact: -c traces exactly the command's system calls —
// the same counts, by name, as strace -f sees /bin/true make (without its
// execve), on every run: none of a launcher's (a Go shim's futex,
// epoll_pwait, tgkill or nanosleep calls before its exec).
func TestKernelCommandExact(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	want := straceCounts(t, "/bin/true")
	for run := 0; run < 3; run++ {
		out, err := exec.Command(bin, "query", "--kernel", "--format", "csv",
			"-e", `range of s is Syscall retrieve (s.Name) where s.Process = $target`,
			"-c", "--", "/bin/true").Output()
		if err != nil {
			t.Fatalf("%v\n%s", err, errText(err))
		}
		if got := syscallCounts(t, string(out)); !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: tqmon -c counts\n  %s\nstrace -f counts (without execve)\n  %s", run, countsText(got), countsText(want))
		}
	}
}

// TestKernelCommandOutputOffDisplay: with --display, the -c command's
// stdout and stderr never reach the terminal the display draws on; they
// go to a file, named on stderr when tqmon ends (or to --command-output).
func TestKernelCommandOutputOffDisplay(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	script := `echo OUT-MARKER; echo ERR-MARKER >&2; while :; do :; done`
	tm := startTerm(t, bin, "query", "--kernel", "--display", "testdata/kernel/cpus.display",
		"-f", "testdata/kernel/cpus.tq", "-c", "--", "sh", "-c", script)
	tm.expect(15*time.Second, "tqmon query --kernel", "sh")
	time.Sleep(300 * time.Millisecond) // the command has run and written by now
	tm.typeText("q")
	if code := tm.exit(10 * time.Second); code != 0 {
		t.Fatalf("exit %d; the terminal shows:\n%s", code, tm.all())
	}
	all := tm.all()
	if strings.Contains(all, "OUT-MARKER") || strings.Contains(all, "ERR-MARKER") {
		t.Errorf("the command's output reached the display's terminal:\n%s", all)
	}
	m := regexp.MustCompile(`the command's output is in (\S+)`).FindStringSubmatch(all)
	if m == nil {
		t.Fatalf("tqmon did not say where the command's output went:\n%s", all)
	}
	defer os.Remove(m[1])
	if b, err := os.ReadFile(m[1]); err != nil || !strings.Contains(string(b), "OUT-MARKER") || !strings.Contains(string(b), "ERR-MARKER") {
		t.Errorf("%s: %v %q", m[1], err, b)
	}

	// --command-output names the file; without a display it is honoured
	// too, and tqmon does not name it.
	file := filepath.Join(t.TempDir(), "cmd.log")
	out, err := exec.Command(bin, "query", "--kernel", "--format", "csv", "--command-output", file,
		"-e", `range of s is Syscall retrieve (s.Name) where s.Process = $target and s.Name = "write"`,
		"-c", "--", "sh", "-c", "echo OUT-MARKER; echo ERR-MARKER >&2").CombinedOutput()
	if err != nil || strings.Contains(string(out), "MARKER") || strings.Count(string(out), "write,") != 2 {
		t.Errorf("%v:\n%s", err, out)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "OUT-MARKER\nERR-MARKER\n" {
		t.Errorf("%s: %v %q", file, err, b)
	}
}

// TestKernelFollow: --follow includes the target's descendants. The
// workload's root makes 100 getppid calls, its two children 20 each and
// a grandchild 3: exactly 143 with --follow, exactly the root's 100
// without; and Process.Parent names the root's children.
func TestKernelFollow(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	work := kerneltest.BuildC(t, "testdata/forks.c", true)
	q := `range of s is Syscall retrieve (s.Name) where s.Process = $target and s.Name = "getppid"`
	for _, tt := range []struct {
		flags []string
		want  int
	}{{nil, 100}, {[]string{"--follow"}, 143}, {nil, 100}, {[]string{"--follow"}, 143}} {
		args := append(append([]string{"query", "--kernel", "--format", "csv"}, tt.flags...), "-e", q, "-c", "--", work)
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("%v: %v\n%s", tt.flags, err, errText(err))
		}
		if got := syscallCounts(t, string(out))["getppid"]; got != tt.want {
			t.Errorf("%v: %d getppid calls, want %d", tt.flags, got, tt.want)
		}
	}
	out, err := exec.Command(bin, "query", "--kernel", "--format", "csv",
		"-e", `range of p is Process retrieve (p.Command, p.Parent, p.Process) where p.Parent = $target`, "-c", "--", work).Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, errText(err))
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[1], "forks,") {
		t.Errorf("the root's children by Process.Parent:\n%s", out)
	}
}
