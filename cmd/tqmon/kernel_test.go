package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
)

// ourPrograms waits until the kernel's listing of our programs satisfies
// ok.
func has(progs []string, name string) bool {
	for _, p := range progs {
		if p == name {
			return true
		}
	}
	return false
}

// tqmon query --kernel -c: the command's getppid calls, exactly, as CSV.
func TestKernelQueryCommand(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	work := kerneltest.BuildC(t, "../../resident/kernel/testdata/workload.c", true)
	out, err := exec.Command(bin, "query", "--kernel", "--format", "csv", "--stats",
		"-e", `range of s is Syscall retrieve (s.Name) where s.Process = $target and s.Name = "getppid"`,
		"-c", "--", work, "1234", "0", filepath.Join(t.TempDir(), "cpu")).Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, errText(err))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if lines[0] != "Name,at" || len(lines) != 1235 || lines[1] != "getppid,"+strings.TrimPrefix(lines[1], "getppid,") {
		t.Errorf("got %d lines, first %q %q", len(lines), lines[0], lines[1])
	}
	kerneltest.WaitPrograms(t, "the query ended", func(p []string) bool { return len(p) == 0 })
}

func errText(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// Killing tqmon with SIGKILL leaves none of our programs in the kernel:
// everything it attached goes with its file descriptors.
func TestKernelKilledLeavesNothing(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	mon := exec.Command(bin, "query", "--kernel", "--target", strconv.Itoa(os.Getpid()), "--duration", "60s",
		"-e", `range of s is Syscall retrieve (s.Name) where s.Process = $target`,
		"-e", `range of r is RunningOn retrieve (r.Thread) where r.Process = $target`)
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	defer mon.Process.Kill()
	kerneltest.WaitPrograms(t, "the monitor's programs", func(p []string) bool {
		return has(p, "tqm_Syscall_0") && has(p, "tqm_RunningOn_0") && has(p, "tqm_fork")
	})
	mon.Process.Signal(syscall.SIGKILL)
	mon.Wait()
	kerneltest.WaitPrograms(t, "none of our programs after SIGKILL", func(p []string) bool { return len(p) == 0 })
}

// The daemon: with no monitor connected nothing is attached; a monitor's
// query attaches what it needs and gets its results; once it is gone,
// nothing is attached again.
func TestKernelResidentDaemon(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	sock := filepath.Join(t.TempDir(), "k.sock")
	startResident(t, bin, "serving", "--listen", sock)
	time.Sleep(200 * time.Millisecond)
	if p, _ := kernel.OurPrograms(); len(p) != 0 {
		t.Fatalf("programs attached with no monitor: %v", p)
	}
	getppidRows(t, bin, "--connect", sock)
	kerneltest.WaitPrograms(t, "nothing attached once the monitor left", func(p []string) bool { return len(p) == 0 })
}

// Usage errors of the kernel flags, and the built-in description.
func TestKernelUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"query", "-e", "x", "-c", "--", "ls"}, "-c, --target, --follow and --spec go with --kernel"},
		{[]string{"query", "--kernel", "-e", "x", "-c"}, "-c needs a command after --"},
		{[]string{"query", "--kernel", "-e", "x", "ls"}, `unexpected argument "ls" (a command to run goes after -c --)`},
		{[]string{"resident", "--listen", "/tmp/x"}, "resident serves the kernel: give --kernel"},
		{[]string{"resident", "--kernel", "--listen", "127.0.0.1:7999"}, "a TCP listener needs a shared token: --token"},
		{[]string{"sensors", "list"}, "give --kernel"},
	} {
		code, _, errs := tqmon(t, tt.args...)
		if code != exitUsage || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, %q; want %q", tt.args, code, errs, tt.want)
		}
	}
	spec := filepath.Join(t.TempDir(), "x.sdl")
	os.WriteFile(spec, []byte("event relation Syscall(Process: Process performer) traced on performer\n"), 0o644)
	code, _, errs := tqmon(t, "sensors", "list", "--kernel", "--spec", spec)
	if want := spec + ":1:16: relation Syscall is already declared (at linux.sdl:"; code != exitUsage || !strings.HasPrefix(errs, want) {
		t.Errorf("a spec redeclaring Syscall: exit %d, %q; want %q…", code, errs, want)
	}
	code, out, _ := tqmon(t, "sensors", "list", "--kernel")
	if code != 0 || out != kernel.LinuxSDL() {
		t.Errorf("sensors list --kernel: exit %d, %d bytes", code, len(out))
	}
	code, out, _ = tqmon(t, "query", "--help")
	if code != 0 || !strings.Contains(out, "--kernel") || !strings.Contains(out, "-c -- ls /tmp") {
		t.Errorf("query --help lacks the kernel flags:\n%s", out)
	}
}

// TestRecordKernel: record --kernel -c records the kernel's relations
// while a command runs (only the relations named), and the database then
// answers queries about it: the file the command opened is there.
func TestRecordKernel(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	dbDir := filepath.Join(t.TempDir(), "k.db")
	target := filepath.Join(t.TempDir(), "marker.txt")
	if err := os.WriteFile(target, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "record", "--kernel", "--db", dbDir, "--relations", "Process,FileOpen", "-c", "--", "cat", target).CombinedOutput()
	if err != nil {
		t.Fatalf("record --kernel: %v\n%s", err, out)
	}
	q := fmt.Sprintf(`range of f is FileOpen retrieve (f.Path) where f.Path = %q`, target)
	got, err := exec.Command(bin, "query", "--db", dbDir, "--format", "csv", "-e", q).CombinedOutput()
	if err != nil {
		t.Fatalf("query: %v\n%s", err, got)
	}
	if !strings.Contains(string(got), target) {
		t.Fatalf("the recording lacks the command's open of %s:\n%s", target, got)
	}
	// RunningOn was not named: its sensor was never enabled.
	got, err = exec.Command(bin, "query", "--db", dbDir, "--format", "csv", "-e", `range of r is RunningOn retrieve (r.Process)`).CombinedOutput()
	if err != nil || string(got) != "Process,from,to\n" {
		t.Fatalf("RunningOn was not named, so nothing of it is recorded; query gave %v:\n%s", err, got)
	}
}

// TestKernelDisplayInTerminal: query --kernel --display animates the
// kernel subject — the processors, and the target command running on them
// — and q ends it cleanly.
func TestKernelDisplayInTerminal(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	tm := startTerm(t, bin, "query", "--kernel", "--display", "testdata/kernel/cpus.display",
		"-f", "testdata/kernel/cpus.tq", "-c", "--", "sh", "-c", "while :; do :; done")
	tm.expect(15*time.Second, "tqmon query --kernel", "sh")
	tm.typeText("q")
	if code := tm.exit(10 * time.Second); code != 0 {
		t.Fatalf("exit %d; the terminal shows:\n%s", code, tm.all())
	}
}

// TestShellKernel: tqmon shell --kernel --target PID asks the kernel about
// a running process; Ctrl-C stops the query, not the shell.
func TestShellKernel(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	busy := exec.Command("sh", "-c", "while :; do cat /dev/null; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { busy.Process.Kill(); busy.Wait() }()
	tm := startTerm(t, bin, "shell", "--kernel", "--target", strconv.Itoa(busy.Process.Pid))
	tm.expect(10*time.Second, "Linux kernel", "tqmon=> ")
	tm.typeText(`range of s is Syscall retrieve (s.Name) where s.Process = $target;` + "\r")
	tm.expect(10*time.Second, "running live", "wait4")
	tm.typeText("\x03")
	tm.expect(10*time.Second, "tqmon=> ")
	tm.typeText(`\q` + "\r")
	if code := tm.exit(10 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	kerneltest.WaitPrograms(t, "no program of ours once the shell has quit", func(p []string) bool { return len(p) == 0 })
}

// TestKernelSyscallRate is the aggregates' live acceptance: a moving count
// (for each 1s) of a workload's getppid calls, made at a known rate, over
// the kernel subject — the rate reported is within 5% of the true one,
// and only the target's sensor is enabled (a noisy neighbour's calls are
// not delivered).
//
// The true one is the count of the workload's calls as they happened
// (it writes their times): its mean is the rate (absolute deadlines),
// but under load a wake-up may come tens of ms late and the calls then
// catch up, so the calls in the last second stray from the rate by more
// than 5% for a while — the workload's doing, which the count reports
// faithfully. Each count is compared with the calls in the second
// before the middle of its piece (the workload's clock aligned with the
// count's on the first call).
func TestKernelSyscallRate(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	work := kerneltest.BuildC(t, "testdata/rate.c", true)
	const rate, secs = 1000, 4
	noise := exec.Command("sh", "-c", "while :; do cat /dev/null; done")
	if err := noise.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { noise.Process.Kill(); noise.Wait() }()
	times := filepath.Join(t.TempDir(), "times")
	cmd := exec.Command(bin, "query", "--kernel", "--format", "csv", "--time-format", "ns", "--stats",
		"-f", filepath.Join(root, "testdata/kernel/syscall_rate.tq"), "-c", "--", work, strconv.Itoa(rate), strconv.Itoa(secs), times)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	type piece struct{ n, from, to int64 }
	var ps []piece
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n")[1:] {
		f := strings.Split(l, ",")
		n, _ := strconv.ParseInt(f[1], 10, 64)
		from, _ := strconv.ParseInt(f[2], 10, 64)
		to, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil { // forever
			to = 1<<63 - 1
		}
		ps = append(ps, piece{n, from, to})
	}
	// The calls run from the first piece with a count to one second
	// before the last one ends; the window is full from one second in.
	first, last := int64(-1), int64(-1)
	for _, p := range ps {
		if p.n > 0 && first < 0 {
			first = p.from
		}
		if p.n > 0 {
			last = p.to
		}
	}
	if first < 0 {
		t.Fatalf("no calls counted:\n%s", out)
	}
	lo, hi := first+int64(1100*time.Millisecond), last-int64(1100*time.Millisecond)
	if hi-lo < int64(time.Second) {
		t.Fatalf("the steady state lasted only %v:\n%s", time.Duration(hi-lo), out)
	}
	text, err := os.ReadFile(times)
	if err != nil {
		t.Fatal(err)
	}
	var calls []int64 // in the count's clock
	for _, l := range strings.Fields(string(text)) {
		c, _ := strconv.ParseInt(l, 10, 64)
		calls = append(calls, c)
	}
	if len(calls) != rate*secs {
		t.Fatalf("the workload wrote %d call times, want %d", len(calls), rate*secs)
	}
	for i := len(calls) - 1; i >= 0; i-- {
		calls[i] += first - calls[0]
	}
	// inLast is the number of calls in the second up to t.
	inLast := func(t int64) float64 {
		hi, _ := slices.BinarySearch(calls, t+1)
		lo, _ := slices.BinarySearch(calls, t-int64(time.Second)+1)
		return float64(hi - lo)
	}
	var sum, within, exact, onPace, total float64
	for _, p := range ps {
		a, b := max(p.from, lo), min(p.to, hi)
		if a >= b {
			continue
		}
		d := float64(b - a)
		sum += float64(p.n) * d
		total += d
		truth := inLast(p.from + (min(p.to, last)-p.from)/2)
		if math.Abs(float64(p.n)-truth) <= 0.05*truth {
			within += d
		}
		if float64(p.n) == truth {
			exact += d
		}
		if math.Abs(truth-rate) <= 0.05*rate {
			onPace += d
		}
	}
	mean := sum / total
	t.Logf("steady rate %.1f calls/s (true %d); %.1f%% of the time within 5%% of the calls made (%.1f%% equal), which were within 5%% of the rate %.1f%% of the time",
		mean, rate, 100*within/total, 100*exact/total, 100*onPace/total)
	if math.Abs(mean-rate) > 0.05*rate || within < 0.95*total {
		t.Errorf("rate %.1f, %.1f%% of the time within 5%% of the calls made (%d a second)", mean, 100*within/total, rate)
	}
	// Only the target's sensor: the packets are the workload's own calls
	// (its getppid calls, its sleeps and its start-up), not the neighbour's.
	var packets int
	for _, l := range strings.Split(stderr.String(), "\n") {
		if n, ok := strings.CutPrefix(l, "packets Syscall: "); ok {
			packets, _ = strconv.Atoi(n)
		}
	}
	if packets < rate*secs || packets > 2*rate*secs+500 {
		t.Errorf("Syscall packets %d: want the target's calls only (about %d)\n%s", packets, 2*rate*secs, stderr.String())
	}
}

// getppidRows starts a process that keeps calling getppid and queries its
// system calls for 2 s from the resident the flags reach: at least 100
// rows, every one that process's getppid. (Attaching can take a good part
// of a second on a loaded machine; the workload floods the ring, so
// losses are allowed — reported, not the point.)
func getppidRows(t *testing.T, bin string, reach ...string) {
	getppidRowsOf(t, bin, "", reach...)
}

// getppidRowsOf is getppidRows over a fleet's host (its entity
// identifiers host-qualified, HOST/PID) when host is set.
func getppidRowsOf(t *testing.T, bin, host string, reach ...string) {
	t.Helper()
	work := kerneltest.BuildC(t, "../../resident/kernel/testdata/workload.c", true)
	busy := exec.Command(work, "100000000", "0", filepath.Join(t.TempDir(), "cpu"))
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { busy.Process.Kill(); busy.Wait() }()
	args := append(append([]string{"query"}, reach...), "--duration", "2s", "--format", "csv", "--allow-loss",
		"--param", "p="+qualified(host, busy.Process.Pid),
		"-e", `range of s is Syscall retrieve (s.Process, s.Name) where s.Process = $p`)
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, errText(err))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := qualified(host, busy.Process.Pid) + ",getppid,"
	if len(lines) < 100 {
		t.Errorf("only %d lines", len(lines))
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, want) {
			t.Errorf("a row of another process or call: %q", l)
			break
		}
	}
}

// -p PID is --target PID, as bpftrace's -p: $target names that running
// process, and only its calls come back.
func TestKernelPidShorthand(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	work := kerneltest.BuildC(t, "../../resident/kernel/testdata/workload.c", true)
	busy := exec.Command(work, "100000000", "0", filepath.Join(t.TempDir(), "cpu"))
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { busy.Process.Kill(); busy.Wait() }()
	pid := strconv.Itoa(busy.Process.Pid)
	out, err := exec.Command(bin, "query", "--kernel", "-p", pid, "--duration", "2s", "--format", "csv", "--allow-loss",
		"-e", `range of s is Syscall retrieve (s.Process, s.Name) where s.Process = $target`).Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, errText(err))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 100 {
		t.Fatalf("only %d lines", len(lines))
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, pid+",getppid,") {
			t.Fatalf("a row of another process or call: %q", l)
		}
	}
}

// startResident runs tqmon resident --kernel with args until the test
// ends, once its first line on stderr says want.
func startResident(t *testing.T, bin, want string, args ...string) {
	t.Helper()
	res := exec.Command(bin, append([]string{"resident", "--kernel"}, args...)...)
	stderr, _ := res.StderrPipe()
	if err := res.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		res.Process.Signal(os.Interrupt)
		res.Wait()
	})
	line, _ := bufio.NewReader(stderr).ReadString('\n')
	if !strings.Contains(line, want) {
		t.Fatalf("resident: %q", line)
	}
}

// qualified is pid as a fleet's host names it (HOST/PID), or bare.
func qualified(host string, pid int) string {
	if host == "" {
		return fmt.Sprint(pid)
	}
	return fmt.Sprintf("%s/%d", host, pid)
}

// --explain says which part of a selection the kernel's programs
// evaluate: the name (as its system call number) and the thread, not the
// ordering of names (the monitor's); and an entity selection the kernel
// enables by.
func TestKernelExplainSelections(t *testing.T) {
	kerneltest.Need(t)
	out, err := exec.Command(binary(t), "query", "--kernel", "--target", strconv.Itoa(os.Getpid()), "--explain",
		"-e", `range of s is Syscall retrieve (s.Name) where s.Process = $target and s.Name = "getppid" and s.Thread != "1" and s.Name < "z"`).Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, errText(err))
	}
	want := `in the kernel (α s on Syscall, in its eBPF programs, before the ring buffer): Name = "getppid" (system call 110) and not (Thread = 1)` + "\n"
	if !strings.Contains(string(out), want) {
		t.Errorf("--explain does not say %q:\n%s", want, out)
	}
	// An entity selection: enabled in the kernel by the command.
	out, err = exec.Command(binary(t), "query", "--kernel", "--explain",
		"-e", `range of p is Process range of f is FileOpen retrieve (f.Path) where f.Process = p.Process and p.Command = "cat"`).Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, errText(err))
	}
	want = `in the kernel (α f on FileOpen): enabled for a process from its fork or exec while p.Command = "cat"`
	if !strings.Contains(string(out), want) {
		t.Errorf("--explain does not say %q:\n%s", want, out)
	}
}
