package kernel_test

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
)

// A command's 4,000,000 getppid calls, counted with count() over the
// default ring: every one is counted — none dropped by the kernel, none
// lost in the drain or the session (make test-heavy: TQMON_HEAVY=1).
// The count's own where clause names the target: an aggregate does not
// see the retrieve's (docs/tquel.md), so count(s.Name for ever) alone counts
// every process's system calls — on a machine where others make some, a
// count above the target's, and every one of them through the consumer.
//
// The run borrows its results (remote.LiveOptions.Borrow: the count is
// all it keeps); TQMON_HEAVY_LEND=1 has them lent, each its own record,
// as a consumer that keeps them gets them. TQMON_HEAVY_N sets the calls,
// TQMON_HEAVY_RING the ring's size (bytes; the default ring otherwise).
func TestKernelCountsEveryCall(t *testing.T) {
	if os.Getenv("TQMON_HEAVY") == "" {
		t.Skip("set TQMON_HEAVY=1 (make test-heavy)")
	}
	kerneltest.Need(t)
	bin := kerneltest.BuildC(t, "testdata/workload.c", true)
	// The collector as the command sets it for a live query (cmd/tqmon's
	// liveGCPercent: GOGC 200), unless GOGC says otherwise.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(200))
	}
	n := 4000000
	if v, err := strconv.Atoi(os.Getenv("TQMON_HEAVY_N")); err == nil && v > 0 {
		n = v
	}
	var most int64
	report := filepath.Join(t.TempDir(), "cpu")
	ring, _ := strconv.Atoi(os.Getenv("TQMON_HEAVY_RING"))
	r := runCommandWith(t, kernel.Options{RingBytes: ring}, remote.LiveOptions{Discard: true, Borrow: os.Getenv("TQMON_HEAVY_LEND") == "", OnElem: func(_ int, e stream.Elem) {
		if e.Kind != stream.End {
			most = max(most, e.Rec.Vals[0].N)
		}
	}}, []string{bin, itoa(n), "0", report},
		countTargetGetppid)
	wanted, dropped := r.stats.Wanted["Syscall"], r.stats.Dropped["Syscall"]
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		t.Logf("peak RSS of the monitor (this test process): %d MB", ru.Maxrss>>10)
	}
	t.Logf("counted %d of %d calls; the kernel wanted %d packets, dropped %d; delivered %d", most, n, wanted, dropped, r.stats.Packets["Syscall"])
	// The producer's pace: the workload's fourth line is the time its
	// calls took (ns).
	if text, err := os.ReadFile(report); err == nil {
		if lines := strings.Fields(string(text)); len(lines) >= 4 {
			if ns, err := strconv.ParseInt(lines[3], 10, 64); err == nil && ns > 0 {
				t.Logf("the workload made its calls in %v: %.0f ns a call, %.2fM calls/s", time.Duration(ns), float64(ns)/float64(n), float64(n)/(float64(ns)/1e9)/1e6)
			}
		}
	}
	if most != int64(n) || dropped != 0 {
		t.Errorf("counted %d of %d getppid calls (%d packets dropped)", most, n, dropped)
	}
}
