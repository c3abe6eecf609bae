package kernel_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// Selections in the kernel: the workload makes exactly N getppid calls
// among its other system calls (opens, reads, clock reads, its exit).
// With selections compiled into the programs, the Syscall sensor
// delivers exactly the packets the queries select — N getppid calls and
// the opens of the in-list, no other call of the same process — and
// FileOpen exactly the one open of /etc/hostname; the results equal
// those of the same queries on a resident that selects nothing in the
// kernel (NoSelections: every packet of the target is delivered, the
// monitor selects), run on the same workload.
func TestKernelSelections(t *testing.T) {
	kerneltest.Need(t)
	bin := kerneltest.BuildC(t, "testdata/workload.c", true)
	const n = 20000
	queries := []string{
		`range of s is Syscall retrieve (s.Name) where s.Process = $target and s.Name = "getppid"`,
		`range of s is Syscall retrieve (s.Name) where s.Process = $target and (s.Name = "openat" or s.Name = "open")`,
		`range of f is FileOpen retrieve (f.Path) where f.Process = $target and f.Path = "/etc/hostname" and f.Flags >= 0`,
	}
	run := func(opts kernel.Options) (*run, [][]string) {
		dir := t.TempDir()
		argv := []string{bin, strconv.Itoa(n), "50", filepath.Join(dir, "cpu"), "/etc/hostname", filepath.Join(dir, "missing"), "/etc/hostname.not"}
		r := runCommand(t, opts, argv, queries...)
		if !r.state.Success() {
			t.Fatalf("workload: %v", r.state)
		}
		var rows [][]string
		for _, res := range r.results {
			c := column(res.Table, 0)
			slices.Sort(c)
			rows = append(rows, c)
		}
		return r, rows
	}
	sel, got := run(kernel.Options{Logf: t.Logf})
	all, want := run(kernel.Options{NoSelections: true})
	for i := range queries {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("query %d with selections in the kernel: %d rows %v\nwithout: %d rows %v", i+1, len(got[i]), abbrev(got[i]), len(want[i]), abbrev(want[i]))
		}
	}
	if len(got[0]) != n || len(got[2]) != 1 {
		t.Errorf("%d getppid calls, %d opens of /etc/hostname; want %d and 1", len(got[0]), len(got[2]), n)
	}
	opens := len(got[1])
	if opens < 3 {
		t.Errorf("%d opens, want at least the workload's 3", opens)
	}
	// Exactly the selected packets, and the kernel wanted no more.
	if p, w := sel.stats.Packets["Syscall"], sel.stats.Wanted["Syscall"]; p != n+opens || w != uint64(n+opens) {
		t.Errorf("Syscall: %d packets delivered, %d wanted; want %d (%d getppid, %d opens)", p, w, n+opens, n, opens)
	}
	if p := sel.stats.Packets["FileOpen"]; p != 1 {
		t.Errorf("FileOpen: %d packets delivered, want 1", p)
	}
	if p := all.stats.Packets["Syscall"]; p <= n+opens {
		t.Errorf("without selections, Syscall delivered %d packets: want more than %d (the target's other calls)", p, n+opens)
	}
	t.Logf("Syscall packets: %d with selections in the kernel, %d without; FileOpen %d and %d",
		sel.stats.Packets["Syscall"], all.stats.Packets["Syscall"], sel.stats.Packets["FileOpen"], all.stats.Packets["FileOpen"])
	// What runs in the kernel, as the resident says.
	// ($target is the α's argument: the enable, not a selection.)
	wantSyscall := `Name = "getppid" (system call 110) or Name = "open" (system call 2) or Name = "openat" (system call 257)`
	if p := sel.placed["Syscall"]; len(p) != 1 || !equivalentOr(p[0], wantSyscall) {
		t.Errorf("Syscall's selection in the kernel: %q, want (up to the order of the or) %q", p, wantSyscall)
	}
	for i, p := range sel.placed["FileOpen"] {
		if !strings.Contains(p, `Path = "/etc/hostname"`) || !strings.Contains(p, "Flags >= 0") {
			t.Errorf("FileOpen binding %d's selection in the kernel: %q", i, p)
		}
	}
	if len(all.placed["Syscall"]) != 1 || all.placed["Syscall"][0] != "" {
		t.Errorf("NoSelections: Syscall's selection %q, want none", all.placed["Syscall"])
	}
}

// equivalentOr compares two selections' texts up to the order of their
// characters (the or's operands come in the order of their keys).
func equivalentOr(a, b string) bool {
	x, y := []byte(a), []byte(b)
	slices.Sort(x)
	slices.Sort(y)
	return string(x) == string(y)
}

func abbrev(s []string) []string {
	if len(s) > 6 {
		return append(s[:3:3], "…", s[len(s)-1])
	}
	return s
}

// An entity selection enables in the kernel: `p.Command = NAME`
// enables FileOpen for the processes named NAME while they are so named
// — from their exec into it (or their fork from one so named) to their
// exec into another name — and for no other: the packets delivered are
// exactly the results (one per open of such a process), with the entity
// records the enabling needs; no process is enabled by its ID. The
// results equal those of a resident without entity triggers
// (NoSelections: the monitor widens, FileOpen is enabled for every
// process, the join selects), run on the same command. The commands run
// under names of their own (copies of cat and sh): other processes of the
// machine's are no business of this test's.
func TestKernelEntitySelection(t *testing.T) {
	kerneltest.Need(t)
	dir := t.TempDir()
	var files []string
	for _, name := range []string{"a", "b", "c"} {
		f := filepath.Join(dir, name)
		os.WriteFile(f, []byte(name+"\n"), 0o644)
		files = append(files, f)
	}
	copyAs := func(prog, name string) string {
		path, err := exec.LookPath(prog)
		if err != nil {
			t.Skipf("no %s", prog)
		}
		return copyProgram(t, path, dir, name)
	}
	id := os.Getpid() % 1000000
	cat, sh := copyAs("cat", fmt.Sprintf("tqcat%d", id)), copyAs("sh", fmt.Sprintf("tqsh%d", id))
	for _, c := range []struct {
		argv      []string
		out       string
		seen, not []string // opens among the results, and not
	}{
		{argv: append([]string{cat}, files...), out: "a\nb\nc\n", seen: files},
		// The shell opens a for itself, then becomes cat (another
		// name), which opens b: its opens are not the selection's.
		{argv: []string{sh, "-c", "read x < " + files[0] + "; exec cat " + files[1]}, out: "b\n", seen: files[:1], not: files[1:2]},
	} {
		name := filepath.Base(c.argv[0])
		q := `range of p is Process range of f is FileOpen retrieve (f.Path) where f.Process = p.Process and p.Command = "` + name + `"`
		run := func(opts kernel.Options) (*run, []string) {
			r := runCommand(t, opts, c.argv, q)
			if !r.state.Success() || r.stdout != c.out {
				t.Fatalf("%s: %v, output %q", name, r.state, r.stdout)
			}
			paths := column(r.results[0].Table, 0)
			slices.Sort(paths)
			return r, paths
		}
		sel, got := run(kernel.Options{Logf: t.Logf})
		all, want := run(kernel.Options{NoSelections: true})
		for _, f := range c.seen {
			if !slices.Contains(got, f) {
				t.Errorf("%s: its open of %s is not in the results %v", name, f, got)
			}
		}
		for _, f := range c.not {
			if slices.Contains(got, f) {
				t.Errorf("%s: the open of %s after its exec is in the results %v", name, f, got)
			}
		}
		// (A path the program could not read — a page of the command's
		// not yet faulted in — reads as "": the two runs may differ so,
		// and only so.)
		if !sameBut(got, want, "") {
			t.Errorf("%s: results with the entity selection in the kernel:\n%q\nwithout:\n%q", name, got, want)
		}
		if p := sel.stats.Packets["FileOpen"]; p != len(got) {
			t.Errorf("%s: FileOpen: %d packets delivered for %d results, want one per result", name, p, len(got))
		}
		if len(sel.flags["FileOpen"]) != 0 {
			t.Errorf("%s: FileOpen's enable map holds %v, want nothing (the selection enables)", name, sel.flags["FileOpen"])
		}
		if len(sel.stats.Widened) != 0 || len(all.stats.Widened) != 1 {
			t.Errorf("%s: widened: %v with entity triggers, %v without; want none and f", name, sel.stats.Widened, all.stats.Widened)
		}
		t.Logf("%s: FileOpen packets: %d with the entity selection in the kernel (%d results), %d without",
			name, sel.stats.Packets["FileOpen"], len(got), all.stats.Packets["FileOpen"])
	}
}

// copyProgram copies the program at path into dir as name (a command
// name of its own) and returns the copy's path.
func copyProgram(t *testing.T, path, dir, name string) string {
	t.Helper()
	to := filepath.Join(dir, name)
	if text, err := os.ReadFile(path); err != nil || os.WriteFile(to, text, 0o755) != nil {
		t.Fatal("copying", path, err)
	}
	return to
}

// logCapture returns a Logf that keeps what it is given, and a function
// returning what it kept.
func logCapture() (logf func(string, ...any), lines func() []string) {
	var mu sync.Mutex
	var kept []string
	logf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		kept = append(kept, fmt.Sprintf(format, args...))
	}
	lines = func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(kept)
	}
	return logf, lines
}

// sameBut reports whether a and b are the same multiset but where one has
// blank: each element of one missing from the other is matched by a
// blank of the other's.
func sameBut(a, b []string, blank string) bool {
	if len(a) != len(b) {
		return false
	}
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	for _, s := range b {
		count[s]--
	}
	onlyA, onlyB := 0, 0
	for s, n := range count {
		switch {
		case s == blank:
		case n > 0:
			onlyA += n
		case n < 0:
			onlyB -= n
		}
	}
	return onlyA <= max(-count[blank], 0) && onlyB <= max(count[blank], 0)
}

// Concurrent sessions with different selections on one sensor share its
// programs, which select what either selects (the or), and the drain
// sends each session only what its own selection passes (the sieve): one
// is sent exactly the workload's N getppid calls, the other exactly its 5
// opens (openat: /proc/self/schedstat at its start, the one file it is
// given, /proc/self/stat and /proc/self/schedstat at its end, and OUT; it
// is built statically: no loader opens libraries) — no packet of the
// other's. Each session's counts are its own: what the other's selection
// passed and its own filtered out is not wanted by it, so delivered +
// dropped = wanted for each. Before, both were sent the or's packets and
// each counted the or's as wanted.
func TestKernelConcurrentSelections(t *testing.T) {
	kerneltest.Need(t)
	bin := kerneltest.BuildC(t, "testdata/workload.c", true)
	const n = 5000
	var placed []string
	results, stats := concurrently(t, []string{bin, strconv.Itoa(n), "20", filepath.Join(t.TempDir(), "cpu"), "/etc/hostname"}, nil,
		func(res *kernel.Resident) { placed = res.Placed()["Syscall"] },
		`range of s is Syscall retrieve (s.Name) where s.Process = $target and s.Name = "getppid"`,
		`range of s is Syscall retrieve (s.Name) where s.Process = $target and s.Name = "openat"`,
	)
	const wantOpens = 5
	getppid, opens := len(results[0][0].Table.Rows), len(results[1][0].Table.Rows)
	if getppid != n || opens != wantOpens {
		t.Errorf("getppid calls %d, want %d; opens %d, want the workload's %d", getppid, n, opens, wantOpens)
	}
	for i, c := range [][]string{column(results[0][0].Table, 0), column(results[1][0].Table, 0)} {
		for _, name := range c {
			if want := []string{"getppid", "openat"}[i]; name != want {
				t.Errorf("session %d: a %s call among its results (want only %s)", i+1, name, want)
				break
			}
		}
	}
	want := `Name = "getppid" (system call 110) or Name = "openat" (system call 257)`
	if len(placed) != 1 || !equivalentOr(placed[0], want) {
		t.Errorf("Syscall selects %q, want (up to the order of the or) %q", placed, want)
	}
	for i, st := range stats {
		want := []int{n, wantOpens}[i]
		p, w, d := st.Packets["Syscall"], st.Wanted["Syscall"], st.Dropped["Syscall"]
		if p != want {
			t.Errorf("session %d: %d Syscall packets, want its own %d (the or's: %d)", i+1, p, want, n+wantOpens)
		}
		if uint64(p)+d != w || d != 0 {
			t.Errorf("session %d: %d Syscall packets delivered + %d dropped, %d wanted; want delivered + dropped = wanted, no drops", i+1, p, d, w)
		}
		t.Logf("session %d: %d Syscall packets delivered, %d dropped, %d wanted", i+1, p, d, w)
	}
}

// concurrently runs queries as concurrent sessions of one kernel
// resident over the command argv ($target its pid, params besides),
// calls ready once every session is ready, before the command runs, and
// returns each query's results and stats.
func concurrently(t *testing.T, argv []string, params map[string]string, ready func(*kernel.Resident), queries ...string) ([][]query.Result, []remote.LiveStats) {
	t.Helper()
	return concurrentlyOn(t, [][]string{argv}, func(int) int { return 0 }, params, ready, queries...)
}

// concurrentlyOn is concurrently over several commands, run at once:
// query i's $target is the pid of command on(i).
func concurrentlyOn(t *testing.T, argvs [][]string, on func(int) int, params map[string]string, ready func(*kernel.Resident), queries ...string) ([][]query.Result, []remote.LiveStats) {
	t.Helper()
	res, err := kernel.New(kernel.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	var cmds []*launch.Cmd
	for _, argv := range argvs {
		cmd, err := launch.Start(argv, launch.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer cmd.Kill()
		cmds = append(cmds, cmd)
	}
	var wg sync.WaitGroup
	started := make(chan struct{}, len(queries))
	results := make([][]query.Result, len(queries))
	stats := make([]remote.LiveStats, len(queries))
	errs := make([]error, len(queries))
	for i, q := range queries {
		ps := map[string]string{"target": strconv.Itoa(cmds[on(i)].Pid)}
		for k, v := range params {
			ps[k] = v
		}
		prog, err := query.Compile(res.Catalog(), []query.Source{{Name: "q", Text: q}}, check.Options{Params: ps})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], stats[i], errs[i] = remote.RunLive(context.Background(), prog, []wire.Conn{res.Local()},
				remote.LiveOptions{Ready: func() { started <- struct{}{} }})
		}()
	}
	for range queries {
		<-started
	}
	if ready != nil {
		ready(res)
	}
	for _, cmd := range cmds {
		cmd.Release()
	}
	for _, cmd := range cmds {
		select {
		case <-cmd.Done():
		case <-time.After(60 * time.Second):
			t.Fatal("the command did not finish")
		}
	}
	time.Sleep(20 * time.Millisecond)
	res.Close()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return results, stats
}

// Intervals reported as a begin and an end (RunningOn: switched in,
// switched out) are sent to a session whole or not at all: the drain
// evaluates its selection at the begin, and the end goes where the begin
// went. Three sessions on the workload's process: one selecting its runs
// on processor 0, one those elsewhere, one every run (no selection: the
// programs select nothing, the drain filters for the other two). The two
// are sent exactly their own runs — together, exactly the third's — and
// each one's counts are its own (a begin and an end filtered out are two
// packets it does not want): delivered + dropped = wanted for each.
func TestKernelConcurrentIntervalSelections(t *testing.T) {
	kerneltest.Need(t)
	bin := kerneltest.BuildC(t, "testdata/workload.c", true)
	results, stats := concurrently(t, []string{bin, "1000", "50", filepath.Join(t.TempDir(), "cpu")}, map[string]string{"cpu": "0"}, nil,
		`range of r is RunningOn retrieve (r.Processor) where r.Process = $target and r.Processor = $cpu`,
		`range of r is RunningOn retrieve (r.Processor) where r.Process = $target and r.Processor != $cpu`,
		`range of r is RunningOn retrieve (r.Processor) where r.Process = $target`,
	)
	on, off, all := column(results[0][0].Table, 0), column(results[1][0].Table, 0), column(results[2][0].Table, 0)
	for _, c := range on {
		if c != "0" {
			t.Errorf("session 1 (processor 0): a run on processor %s", c)
		}
	}
	for _, c := range off {
		if c == "0" {
			t.Errorf("session 2 (not processor 0): a run on processor 0")
		}
	}
	if len(on)+len(off) != len(all) || len(all) == 0 {
		t.Errorf("runs: %d on processor 0, %d elsewhere, %d in all (want the sum, at least one)", len(on), len(off), len(all))
	}
	p := make([]int, len(stats))
	for i, st := range stats {
		w, d := st.Wanted["RunningOn"], st.Dropped["RunningOn"]
		p[i] = st.Packets["RunningOn"]
		if uint64(p[i])+d != w {
			t.Errorf("session %d: %d RunningOn packets delivered + %d dropped, %d wanted; want delivered + dropped = wanted", i+1, p[i], d, w)
		}
		t.Logf("session %d: %d RunningOn packets delivered, %d dropped, %d wanted", i+1, p[i], d, w)
	}
	if p[0]+p[1] != p[2] {
		t.Errorf("RunningOn packets: %d + %d sent to the selecting sessions, %d to the one that selects nothing: want the sum", p[0], p[1], p[2])
	}
}
