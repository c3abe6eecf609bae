package kernel_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
)

// The other sensors of linux.sdl on the workload: each system call as an
// interval with its result (getppid returns the test's pid: the command
// is this process's child), the workload's nap off the
// processor, and its wake-up.
func TestOtherSensors(t *testing.T) {
	kerneltest.Need(t)
	bin := kerneltest.BuildC(t, "testdata/workload.c", true)
	const n = 500
	r := runCommand(t, kernel.Options{}, []string{bin, strconv.Itoa(n), "20", filepath.Join(t.TempDir(), "cpu")},
		`range of c is SyscallCall retrieve (c.Name, c.Result) where c.Process = $target and c.Name = "getppid"`,
		`range of o is OffCPU retrieve (o.Thread, o.Reason) where o.Process = $target`,
		`range of w is Wakeup retrieve (w.Waker) where w.Wakee = $target`,
		`range of p is Process retrieve (p.Command) where p.Process = $target`,
	)
	calls := r.results[0].Table.Rows
	if len(calls) != n {
		t.Errorf("getppid calls as intervals: %d, want %d", len(calls), n)
	}
	self := int64(os.Getpid())
	for _, c := range calls {
		if c.Vals[1].N != self || c.To <= c.From {
			t.Errorf("getppid call %v [%d, %d): want result %d", c.Vals, c.From, c.To, self)
			break
		}
	}
	var napped bool
	for _, o := range r.results[1].Table.Rows {
		if o.Vals[1].S == "Sleeping" && o.To-o.From >= int64(10*time.Millisecond) {
			napped = true
		}
	}
	if !napped {
		t.Errorf("no OffCPU Sleeping interval of 10 ms or more: %v", r.results[1].Table.Rows)
	}
	if len(r.results[2].Table.Rows) == 0 {
		t.Error("no wake-up of the workload")
	}
	// The process: the workload's command only — started stopped at its
	// exec, it was never a launcher.
	cmds := column(r.results[3].Table, 0)
	if len(cmds) != 1 || cmds[0] != "workload" {
		t.Errorf("the target's commands: %v", cmds)
	}
}

// A traced-then-disabled sensor: each firing decrements its flag in the
// kernel and the resident re-arms it at its next drain. Calls far enough
// apart are all reported.
//
// The calls are 50 ms apart (they were 5 ms). The re-arm waits for the
// round that applies the firing's record — the next or the one after
// (its stamp must be under the round's watermark) — each 1 ms apart on a
// quiet machine, but at a load of 25 on two cores a round can wait tens
// of ms for a turn, and a call before the re-arm is, by the sensor's
// design, not reported. A resident that never re-arms, or re-arms only
// once, still reports 1 or 2 of the 10 calls, however far apart.
func TestDecrementRearm(t *testing.T) {
	kerneltest.Need(t)
	bin := kerneltest.BuildC(t, "testdata/work.c", false)
	spec := kernel.Source{Name: "once.sdl", Text: `event relation WorkOnce(Process: Process performer, N: int) traced then disabled on performer
sensor WorkOnce at uprobe "` + bin + `" "work" (Process = tgid, N = arg0)
`}
	const n = 10
	r := runCommand(t, kernel.Options{Specs: []kernel.Source{spec}}, []string{bin, strconv.Itoa(n), "50000"},
		`range of c is WorkOnce retrieve (c.N) where c.Process = $target`)
	if got := len(r.results[0].Table.Rows); got != n {
		t.Errorf("%d calls 50 ms apart, %d reported; flags %v, kernel %v, remote %+v", n, got, r.flags, r.kstats, r.stats)
	}
}
