package kernel_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
)

// A command's 4,000,000 getppid calls, counted with count() over the
// default ring: every one is counted — none dropped by the kernel, none
// lost in the drain or the session (make test-heavy: TQMON_HEAVY=1).
func TestKernelCountsEveryCall(t *testing.T) {
	if os.Getenv("TQMON_HEAVY") == "" {
		t.Skip("set TQMON_HEAVY=1 (make test-heavy)")
	}
	kerneltest.Need(t)
	bin := kerneltest.BuildC(t, "testdata/workload.c", true)
	const n = 4000000
	var most int64
	r := runCommandWith(t, kernel.Options{}, remote.LiveOptions{Discard: true, OnElem: func(_ int, e stream.Elem) {
		if e.Kind != stream.End {
			most = max(most, e.Rec.Vals[0].N)
		}
	}}, []string{bin, itoa(n), "0", filepath.Join(t.TempDir(), "cpu")},
		`range of s is Syscall retrieve (N = count(s.Name for ever)) where s.Process = $target and s.Name = "getppid"`)
	wanted, dropped := r.stats.Wanted["Syscall"], r.stats.Dropped["Syscall"]
	t.Logf("counted %d of %d calls; the kernel wanted %d packets, dropped %d; delivered %d", most, n, wanted, dropped, r.stats.Packets["Syscall"])
	if most != n || dropped != 0 {
		t.Errorf("counted %d of %d getppid calls (%d packets dropped)", most, n, dropped)
	}
}
