package kernel_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
)

// uprobeSpec binds three relations to a function of bin: its entries
// (events), its calls from entry to return, and its calls with their
// results.
func uprobeSpec(bin, symbol string) kernel.Source {
	return kernel.Source{Name: "work.sdl", Text: fmt.Sprintf(`
event relation WorkCall(Process: Process performer, Thread: Thread, N: int) traced on performer
sensor WorkCall at uprobe %[1]q %[2]q (Process = tgid, Thread = pid, N = arg0)

interval relation WorkSpan(Process: Process performer, N: int) traced on performer
sensor WorkSpan at uprobe %[1]q %[2]q (Process = tgid, N = arg0)

interval relation WorkResult(Process: Process performer, N: int, R: int) traced on performer
sensor WorkResult from uprobe %[1]q %[2]q (Process = tgid, N = arg0) to uretprobe %[1]q %[2]q (R = ret)
`, bin, symbol)}
}

// checkCalls runs bin (which calls symbol(i) for i < n, returning 2i,
// and prints the sum of the results) under the three uprobe sensors: each
// call is one entry event, one call interval and one interval with its
// result — and the program's own output is unharmed.
func checkCalls(t *testing.T, bin, symbol string, n int) {
	t.Helper()
	r := runCommand(t, kernel.Options{Specs: []kernel.Source{uprobeSpec(bin, symbol)}}, []string{bin, strconv.Itoa(n)},
		`range of c is WorkCall retrieve (c.N) where c.Process = $target`,
		`range of s is WorkSpan retrieve (s.N) where s.Process = $target`,
		`range of w is WorkResult retrieve (w.N, w.R) where w.Process = $target`,
	)
	if !r.state.Success() {
		t.Fatalf("%s: %v", bin, r.state)
	}
	if want := strconv.Itoa(n*(n-1)) + "\n"; r.stdout != want {
		t.Errorf("%s printed %q, want %q", bin, r.stdout, want)
	}
	var want []string
	for i := range n {
		want = append(want, strconv.Itoa(i))
	}
	for i, rel := range []string{"WorkCall", "WorkSpan", "WorkResult"} {
		got := column(r.results[i].Table, 0)
		slices.SortFunc(got, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
		if !slices.Equal(got, want) {
			t.Errorf("%s: N = %v, want 0 to %d", rel, got, n-1)
		}
	}
	for _, row := range r.results[2].Table.Rows {
		if row.Vals[1].N != 2*row.Vals[0].N || row.To <= row.From {
			t.Errorf("WorkResult %v [%d, %d)", row.Vals, row.From, row.To)
		}
	}
	// The calls are sequential: entry events fall inside their spans.
	for _, row := range r.results[1].Table.Rows {
		if row.To <= row.From {
			t.Errorf("WorkSpan %v [%d, %d)", row.Vals, row.From, row.To)
		}
	}
}

func TestUprobeC(t *testing.T) {
	kerneltest.Need(t)
	bin := kerneltest.BuildC(t, "testdata/work.c", false)
	checkCalls(t, bin, "work", 50)
}

// A Go program: arguments in Go's registers, returns probed at the
// function's RET instructions (no uretprobe rewriting Go's stack). It runs
// to completion and prints what it would print unobserved.
func TestUprobeGo(t *testing.T) {
	kerneltest.Need(t)
	bin := kerneltest.BuildGo(t, "testdata/work.go.txt")
	checkCalls(t, bin, "main.work", 50)
}
