package exec_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/internal/testkit"
)

// TestBudgetStopsJoin: the operators' accounting alone (no watchdog) stops
// a 6-variable self-join once what it holds is over the budget, with an
// error naming the join, its statement and place — and, since the budget
// is checked inside the enumeration of bindings, not far past it.
func TestBudgetStopsJoin(t *testing.T) {
	h := benchHistory(t, 40, 50)
	stmts := testkit.Compile(t, h.Catalog, "six.tq", testkit.SixWayJoin, 0)
	const limit = 4 << 20
	_, _, err := interpret(h.Catalog, h, stmts, exec.Options{Budget: &exec.Budget{Limit: limit}})
	var me *exec.MemoryError
	if !errors.As(err, &me) || !errors.Is(err, exec.ErrMemory) {
		t.Fatalf("err = %v, want a *exec.MemoryError", err)
	}
	if me.Heap != 0 || len(me.Held) == 0 {
		t.Fatalf("got %+v, want the accounting's verdict", me)
	}
	top := me.Held[0]
	if top.Op != "join of a, b, c, d, e, f" || top.Stmt != stmts[0] {
		t.Errorf("top holder %q in %v, want the join of Six", top.Op, top.Stmt)
	}
	var total int64
	for _, h := range me.Held {
		total += h.Bytes
	}
	if total < limit || total > limit+limit/4 {
		t.Errorf("operators held ≈ %d bytes at the stop, want just past %d", total, limit)
	}
	msg := err.Error()
	for _, want := range []string{"query stopped: memory budget 4.0 MiB exceeded", "join of a, b, c, d, e, f in Six (six.tq:7:1) holds", "pending bindings"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

// TestBudgetReportedHeap: a heap the watchdog reports over the budget stops
// the run at its next check, naming the heap size.
func TestBudgetReportedHeap(t *testing.T) {
	h := benchHistory(t, 10, 20)
	stmts := testkit.Compile(t, h.Catalog, "six.tq", testkit.SixWayJoin, 0)
	b := &exec.Budget{Limit: 1 << 30}
	b.Over(3 << 30)
	_, _, err := interpret(h.Catalog, h, stmts, exec.Options{Budget: b})
	var me *exec.MemoryError
	if !errors.As(err, &me) || me.Heap != 3<<30 {
		t.Fatalf("err = %v, want a *exec.MemoryError with heap 3 GiB", err)
	}
	if !strings.Contains(err.Error(), "memory budget 1.0 GiB exceeded (heap 3.0 GiB)") {
		t.Errorf("message %q", err)
	}
}

// TestBudgetLeavesResults: a run within its budget gives what it gives
// without one.
func TestBudgetLeavesResults(t *testing.T) {
	h := benchHistory(t, 20, 30)
	q := `range of a is Process
range of b is Process
retrieve (A = a.Process, B = b.Process) where a.State = b.State and a.Prio = b.Prio`
	stmts := testkit.Compile(t, h.Catalog, "q.tq", q, 0)
	want, _, err := interpret(h.Catalog, h, stmts, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stmts = testkit.Compile(t, h.Catalog, "q.tq", q, 0)
	got, _, err := interpret(h.Catalog, h, stmts, exec.Options{Budget: &exec.Budget{Limit: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	if render(got[0]) != render(want[0]) {
		t.Errorf("within a budget:\n%s\nwithout:\n%s", render(got[0]), render(want[0]))
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 64 << 20: "64.0 MiB", 3 << 29: "1.5 GiB"} {
		if got := exec.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
