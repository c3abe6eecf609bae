package kernel_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkKernelCommand (make bench-kernel; root, bpftrace) compares the
// whole commands a user runs to print every system call of a command to
// a file:
//
//	tqmon:    tqmon query --kernel --format csv -e 'range of s is Syscall
//	            retrieve (s.Name, s.Thread) where s.Process = $target' -c -- WORK
//	bpftrace: bpftrace -B full -o FILE -e 'tracepoint:raw_syscalls:sys_enter
//	            /pid == cpid/ { printf("%d %d\n", tid, args->id); }' -c WORK
//
// with WORK the workload making N getppid calls, and the workload alone,
// in interleaved rounds. Each run's CPU time is the whole process tree's
// (the tool, the workload, and the probes run in the workload's system
// calls), from the tool's rusage; a tool's added CPU is its run's minus
// the workload's alone. Start-up is subtracted by running each tool on a
// tiny workload too (Tiny calls): the added CPU per event is
// (added(N) − added(Tiny)) / (N − Tiny). It reports those (medians of the
// rounds), their ratio tqmon/bpftrace, the getppid calls each lost
// (printed fewer than N; the most in a round) and each tool's peak RSS.
// Each tool runs once on the tiny workload before the rounds (warm-up).
// TQMON_BENCH_N and TQMON_BENCH_ROUNDS set N and the rounds;
// TQMON_BENCH_BASE=PATH adds another tqmon binary (a baseline, say main's)
// to the rounds, measured the same way.
func BenchmarkKernelCommand(b *testing.B) {
	bt, work, n, rounds := benchSetup(b, 3)
	tq := filepath.Join(b.TempDir(), "tqmon")
	if out, err := exec.Command("go", "build", "-o", tq, "github.com/tqmon/tqmon/cmd/tqmon").CombinedOutput(); err != nil {
		b.Fatalf("building tqmon: %v\n%s", err, out)
	}
	const tiny = 1000
	tools := []cmdTool{{name: "tqmon", bin: tq}, {name: "bpftrace", bin: bt}}
	if base := os.Getenv("TQMON_BENCH_BASE"); base != "" {
		tools = append(tools, cmdTool{name: "base", bin: base})
	}
	dir := b.TempDir()
	// A first run loads each binary (a freshly built one from disk):
	// not part of what is measured.
	for i := range tools {
		runCmd(b, dir, work, tiny, &tools[i])
	}
	var alone, aloneTiny []float64
	added := make([][]float64, len(tools))
	for r := range rounds {
		alone = append(alone, runCmd(b, dir, work, n, nil).cpu)
		aloneTiny = append(aloneTiny, runCmd(b, dir, work, tiny, nil).cpu)
		for i := range tools {
			t := &tools[i]
			big := runCmd(b, dir, work, n, t)
			small := runCmd(b, dir, work, tiny, t)
			per := ((big.cpu - alone[r]) - (small.cpu - aloneTiny[r])) / float64(n-tiny)
			added[i] = append(added[i], per)
			t.lost = max(t.lost, n-big.got)
			t.rss = max(t.rss, big.rss)
			b.Logf("round %d %s: %d of %d calls printed, %.0f ns CPU per call added, peak RSS %.0f MB", r+1, t.name, big.got, n, per, big.rss/1e6)
		}
	}
	for i, t := range tools {
		m := median(added[i])
		b.ReportMetric(m, t.name+"-added-ns/event")
		b.ReportMetric(float64(t.lost), t.name+"-lost")
		b.ReportMetric(t.rss/1e6, t.name+"-peak-MB")
		b.Logf("%s: added CPU per event %.0f ns %v; lost at most %d; peak RSS %.0f MB", t.name, m, round(added[i]), t.lost, t.rss/1e6)
	}
	ratio := median(added[0]) / median(added[1])
	b.ReportMetric(ratio, "tqmon/bpftrace")
	b.Logf("tqmon/bpftrace added CPU per event: %.2f (workload alone: %.0f ns per call)", ratio, median(alone)/float64(n))
}

// cmdTool is a tool BenchmarkKernelCommand runs, with what it saw.
type cmdTool struct {
	name, bin string
	lost      int
	rss       float64 // bytes
}

// cmdRun is one run: CPU time of the process tree (ns), getppid calls
// printed, peak RSS (bytes).
type cmdRun struct {
	cpu, rss float64
	got      int
}

// runCmd runs the workload with n calls under t (nil: alone), its output
// to a file.
func runCmd(b *testing.B, dir, work string, n int, t *cmdTool) cmdRun {
	b.Helper()
	out := filepath.Join(dir, "out")
	argv := []string{work, strconv.Itoa(n), "0", filepath.Join(dir, "report")}
	var cmd *exec.Cmd
	switch {
	case t == nil:
		cmd = exec.Command(argv[0], argv[1:]...)
	case t.name == "bpftrace":
		cmd = exec.Command(t.bin, "-B", "full", "-o", out, "-e",
			`tracepoint:raw_syscalls:sys_enter /pid == cpid/ { printf("%d %d\n", tid, args->id); }`, "-c", strings.Join(argv, " "))
	default:
		cmd = exec.Command(t.bin, append([]string{"query", "--kernel", "--allow-loss", "--format", "csv", "-e",
			`range of s is Syscall retrieve (s.Name, s.Thread) where s.Process = $target`, "-c", "--"}, argv...)...)
	}
	f, err := os.Create(out)
	if err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer
	if t == nil || t.name != "bpftrace" {
		cmd.Stdout = f
	}
	cmd.Stderr = &stderr
	if err = cmd.Start(); err != nil {
		b.Fatal(err)
	}
	hwm := watchHWM(cmd.Process.Pid)
	err = cmd.Wait()
	peak := hwm()
	f.Close()
	if err != nil {
		b.Fatalf("%s: %v\n%s", cmd.Args[0], err, stderr.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	r := cmdRun{cpu: float64(ru.Utime.Nano() + ru.Stime.Nano()), rss: float64(peak)}
	if t != nil {
		r.got = countCalls(b, out, t.name == "bpftrace")
	}
	return r
}

// countCalls counts the getppid calls in a tool's output.
func countCalls(b *testing.B, path string, bpftrace bool) int {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	k := 0
	for sc.Scan() {
		l := sc.Text()
		if bpftrace && strings.HasSuffix(l, fmt.Sprintf(" %d", syscall.SYS_GETPPID)) || !bpftrace && strings.HasPrefix(l, "getppid,") {
			k++
		}
	}
	return k
}

// watchHWM follows a process's peak resident set (VmHWM in
// /proc/PID/status, every 5 ms) until the returned function is called
// after it exited, which returns the last peak read (bytes). Not the
// wait's rusage: a child's ru_maxrss keeps the greatest resident set of
// every image it was, and before exec it was this test process (forked
// from it, ≈135 MB), so every tool measured so showed this process's
// size (both 135 MB).
func watchHWM(pid int) func() int64 {
	var peak atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	read := func() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				f := strings.Fields(v)
				if len(f) > 0 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						peak.Store(max(peak.Load(), kb<<10))
					}
				}
			}
		}
	}
	go func() {
		defer close(stopped)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return peak.Load()
	}
}
