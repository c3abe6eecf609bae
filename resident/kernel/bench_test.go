package kernel_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
	"github.com/tqmon/tqmon/resident/kernel/launch"
	"github.com/tqmon/tqmon/resident/wire"
)

// BenchmarkKernelOverhead (make bench-kernel; root, bpftrace) times the
// workload's N getppid calls uninstrumented, under tqmon and under an
// equivalent bpftrace script, interleaved in one run, for
//
//	delivery: every system call of the target delivered to user space
//	  tqmon:    range of s is Syscall retrieve (s.Name, s.Thread) where s.Process = $target
//	  bpftrace: tracepoint:raw_syscalls:sys_enter /pid == TARGET/ { printf("%d %d\n", tid, args->id); }
//	nomatch: a predicate no event of the workload matches (another process)
//	  tqmon:    ... where s.Process = $other
//	  bpftrace: tracepoint:raw_syscalls:sys_enter /pid == OTHER/ { printf(...); }
//	name: the target's calls of one name — each getppid call matches
//	  tqmon:    ... where s.Process = $target and s.Name = "getppid"
//	  bpftrace: tracepoint:raw_syscalls:sys_enter /pid == TARGET && args->id == 110/ { printf(...); }
//	othername: the target's calls of a name it does not call in the loop
//	  (getpid): each getppid call is one that does not match
//	  tqmon:    ... where s.Process = $target and s.Name = "getpid"
//	  bpftrace: tracepoint:raw_syscalls:sys_enter /pid == TARGET && args->id == 39/ { printf(...); }
//
// (tqmon evaluates the name in the kernel: the selection compiled into
// its program, see sensor/bpfgen/filter.go)
//
// and reports the added ns per call of each (the median of the rounds
// over the median uninstrumented time) and their ratio tqmon/bpftrace.
// The workload times its own loop (CLOCK_MONOTONIC), so neither tool's
// start-up counts.
func BenchmarkKernelOverhead(b *testing.B) {
	bt, work, n, rounds := benchSetup(b, 5)
	for _, mode := range []string{"delivery", "nomatch", "name", "othername"} {
		b.Run(mode, func(b *testing.B) {
			var base, tq, bpf []float64
			for range rounds {
				base = append(base, benchRun(b, work, n, "", ""))
				tq = append(tq, benchRun(b, work, n, "tqmon", mode))
				bpf = append(bpf, benchRun(b, work, n, bt, mode))
			}
			mb, mt, mp := median(base), median(tq), median(bpf)
			b.ReportMetric(mb, "base-ns/call")
			b.ReportMetric(mt-mb, "tqmon-added-ns/call")
			b.ReportMetric(mp-mb, "bpftrace-added-ns/call")
			b.ReportMetric((mt-mb)/(mp-mb), "tqmon/bpftrace")
			b.Logf("%s: uninstrumented %.0f ns/call %v; tqmon %+.0f ns %v; bpftrace %+.0f ns %v", mode, mb, round(base), mt-mb, round(tq), mp-mb, round(bpf))
		})
	}
}

// benchSetup skips a benchmark against bpftrace unless it can run (it
// says why), and returns bpftrace's path, the workload built, the calls
// per run (TQMON_BENCH_N, default 200,000) and the rounds
// (TQMON_BENCH_ROUNDS, default rounds).
func benchSetup(b *testing.B, rounds int) (bt, work string, n, r int) {
	if os.Getenv("TQMON_BENCH_KERNEL") == "" {
		b.Skip("set TQMON_BENCH_KERNEL=1 (make bench-kernel): needs root and bpftrace")
	}
	kerneltest.Need(b)
	bt, err := exec.LookPath("bpftrace")
	if err != nil {
		b.Skip("bpftrace is not installed (make bench-kernel installs it)")
	}
	if err := mountTracefs(); err != nil {
		b.Skipf("bpftrace needs tracefs: %v", err)
	}
	work = kerneltest.BuildC(b, "testdata/workload.c", true)
	n = 200000
	if s := os.Getenv("TQMON_BENCH_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("TQMON_BENCH_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	return bt, work, n, rounds
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func round(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x + 0.5)
	}
	return out
}

// mountTracefs mounts tracefs where bpftrace looks for tracepoints, if
// it is not there.
func mountTracefs() error {
	if _, err := os.Stat("/sys/kernel/tracing/events"); err == nil {
		return nil
	}
	return syscall.Mount("nodev", "/sys/kernel/tracing", "tracefs", 0, "")
}

// benchRun runs the workload once and returns ns per getppid call: tool
// "" uninstrumented, "tqmon" under an in-process kernel resident and
// remote, or bpftrace's path.
func benchRun(b *testing.B, work string, n int, tool, mode string) float64 {
	b.Helper()
	report := filepath.Join(b.TempDir(), "report")
	argv := []string{work, strconv.Itoa(n), "0", report}
	switch tool {
	case "":
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
	case "tqmon":
		benchTqmon(b, argv, mode)
	default:
		benchBpftrace(b, tool, argv, mode)
	}
	text, err := os.ReadFile(report)
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(text))
	ns, _ := strconv.ParseFloat(f[3], 64)
	return ns / float64(n)
}

func benchTqmon(b *testing.B, argv []string, mode string) {
	res, err := kernel.New(kernel.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer res.Close()
	cmd, err := launch.Start(argv, launch.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer cmd.Kill()
	who := strconv.Itoa(cmd.Pid)
	if mode == "nomatch" {
		who = "1"
	}
	q := `range of s is Syscall retrieve (s.Name, s.Thread) where s.Process = $who`
	switch mode {
	case "name":
		q += ` and s.Name = "getppid"`
	case "othername":
		q += ` and s.Name = "getpid"`
	}
	prog, err := query.Compile(res.Catalog(), []query.Source{{Name: "q", Text: q}},
		check.Options{Params: map[string]string{"who": who}})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var rows int
	wg.Add(1)
	go func() {
		defer wg.Done()
		rs, _, err := remote.RunLive(context.Background(), prog, []wire.Conn{res.Local()}, remote.LiveOptions{Ready: func() { cmd.Release() }})
		if err != nil {
			b.Error(err)
			return
		}
		rows = len(rs[0].Table.Rows)
	}()
	cmd.Wait()
	time.Sleep(20 * time.Millisecond)
	res.Close()
	wg.Wait()
	if (mode == "delivery" || mode == "name") && rows < len(argv) {
		b.Errorf("tqmon delivered %d tuples", rows)
	}
}

func benchBpftrace(b *testing.B, bt string, argv []string, mode string) {
	cmd, err := launch.Start(argv, launch.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer cmd.Kill()
	who := cmd.Pid
	if mode == "nomatch" {
		who = 1
	}
	cond := ""
	switch mode {
	case "name":
		cond = " && args->id == 110" // getppid
	case "othername":
		cond = " && args->id == 39" // getpid
	}
	script := fmt.Sprintf(`tracepoint:raw_syscalls:sys_enter /pid == %d%s/ { printf("%%d %%d\n", tid, args->id); }`, who, cond)
	tr := exec.Command(bt, "-e", script)
	stdout, _ := tr.StdoutPipe()
	tr.Stderr = io.Discard
	if err := tr.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		tr.Process.Signal(os.Interrupt)
		tr.Wait()
	}()
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "Attaching") {
		b.Fatalf("bpftrace: %q %v", line, err)
	}
	go io.Copy(io.Discard, r)
	time.Sleep(100 * time.Millisecond) // attached once it says so; let it settle
	cmd.Release()
	cmd.Wait()
}
