package kernel_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
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

var _ = os.Getpid
