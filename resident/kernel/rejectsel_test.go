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
	"github.com/tqmon/tqmon/resident/wire"
)

// TestRejectedSelectionFallsBack: a selection the kernel's verifier
// rejects (every program with a selection compiled in is made one it
// rejects: kernel.RejectSelections) is not compiled — the programs
// without it are loaded, the log says why, Placed shows nothing in the
// kernel — and the answer is still exact: exactly the workload's N
// getppid calls, the session sent exactly those (the drain's sieve) and
// counting them as all it wanted, while the kernel passed the target's
// every call. A second session arriving while the first holds the sensor
// (a selection changed on an attached sensor) falls back the same way.
func TestRejectedSelectionFallsBack(t *testing.T) {
	kerneltest.Need(t)
	bin := kerneltest.BuildC(t, "testdata/workload.c", true)
	const n = 3000
	logf, logged := logCapture()
	opts := kernel.RejectSelections(kernel.Options{Logf: logf})
	q := `range of s is Syscall retrieve (s.Name) where s.Process = $target and s.Name = "getppid"`
	r := runCommand(t, opts, []string{bin, strconv.Itoa(n), "20", filepath.Join(t.TempDir(), "cpu")}, q)
	if !r.state.Success() {
		t.Fatalf("workload: %v", r.state)
	}
	if got := len(r.results[0].Table.Rows); got != n {
		t.Errorf("%d getppid calls, want %d", got, n)
	}
	if err := r.stats.Err(); err != nil {
		t.Errorf("the run is incomplete: %v", err)
	}
	if p, w := r.stats.Packets["Syscall"], r.stats.Wanted["Syscall"]; p != n || w != n {
		t.Errorf("Syscall: %d packets sent to the session, %d wanted by it; want %d and %d", p, w, n, n)
	}
	if k := r.kstats["Syscall"].Wanted; k <= n {
		t.Errorf("the kernel passed %d Syscall packets: want more than the %d selected (the selection is not compiled)", k, n)
	}
	if p := r.placed["Syscall"]; len(p) != 1 || p[0] != "" {
		t.Errorf("Syscall's selection in the kernel: %q, want none", p)
	}
	if !slices.ContainsFunc(logged(), func(l string) bool {
		return strings.HasPrefix(l, `Syscall: the selection Name = "getppid" (system call 110) is not compiled: `) && strings.Contains(l, "verifier rejected tqm_Syscall_0")
	}) {
		t.Errorf("the rejection is not logged: %q", logged())
	}
	t.Logf("kernel passed %d Syscall packets, the session was sent %d; log: %q", r.kstats["Syscall"].Wanted, r.stats.Packets["Syscall"], logged())
}

// A sensor first attached with a selection already asked for (the
// session's fragment comes before its enable) falls back the same way:
// the enable succeeds, with nothing selected in the kernel. Before, the
// verifier's rejection failed the enable.
func TestRejectedSelectionAtAttach(t *testing.T) {
	kerneltest.Need(t)
	logf, logged := logCapture()
	res, err := kernel.New(kernel.RejectSelections(kernel.Options{Logf: logf}))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	s := res.Open()
	defer s.Close()
	h := res.Hello()
	id := sensorID(t, h, "Syscall")
	name := res.Catalog().Lookup("Syscall").AttrIndex("Name")
	frag := &wire.Command{Kind: wire.CFragment, ID: 1, Sensor: id, Pred: &wire.Pred{Op: wire.PEq, Attr: uint16(name), Value: wire.Value{Kind: wire.VString, S: "getppid"}}}
	if err := s.Apply(frag); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(&wire.Command{Kind: wire.CEnable, Sensor: id, Type: 0, Entity: strconv.Itoa(os.Getpid())}); err != nil {
		t.Fatalf("enable with a selection the verifier rejects: %v", err)
	}
	if p := res.Placed()["Syscall"]; len(p) != 1 || p[0] != "" {
		t.Errorf("Syscall's selection in the kernel: %q, want none", p)
	}
	if l := logged(); len(l) != 1 || !strings.Contains(l[0], `Syscall: the selection Name = "getppid" (system call 110) is not compiled`) {
		t.Errorf("log: %q", l)
	}
}
