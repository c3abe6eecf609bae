package kernel_test

import (
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
)

// A flood of system calls into a one-page ring buffer: packets are
// dropped, and every one is accounted for — the packets the monitor
// received plus those the kernel dropped are the packets the kernel's
// programs wanted to write, counted by them per CPU.
func TestFloodDrops(t *testing.T) {
	kerneltest.Need(t)
	bin := kerneltest.BuildC(t, "testdata/workload.c", true)
	const n = 200000
	r := runCommand(t, kernel.Options{RingBytes: 4096}, []string{bin, "200000", "0", filepath.Join(t.TempDir(), "cpu")},
		`range of s is Syscall retrieve (s.Name, s.Thread) where s.Process = $target`)
	wanted, dropped := r.stats.Wanted["Syscall"], r.stats.Dropped["Syscall"]
	got := uint64(r.stats.Packets["Syscall"])
	t.Logf("wanted %d, delivered %d, dropped %d", wanted, got, dropped)
	if dropped == 0 {
		t.Errorf("no drops with a one-page ring and %d calls", n)
	}
	if got+dropped != wanted {
		t.Errorf("delivered %d + dropped %d = %d, but the kernel wanted %d", got, dropped, got+dropped, wanted)
	}
	if wanted < n {
		t.Errorf("the kernel wanted %d packets for %d calls", wanted, n)
	}
	// The answer is cut at the gaps (docs/design.md, "Observation"): every
	// row is a delivered packet, and none lies inside a gap of Syscall.
	rows := r.results[0].Table.Rows
	if uint64(len(rows)) > got {
		t.Errorf("%d tuples from %d packets", len(rows), got)
	}
	var gaps []remote.Gap
	for _, o := range r.stats.Observed {
		if o.Rel == "Syscall" {
			gaps = o.Gaps
		}
	}
	if len(gaps) == 0 {
		t.Errorf("packets were dropped but the observation of Syscall has no gap")
	}
	for _, row := range rows {
		for _, g := range gaps {
			if row.From >= g.From && row.From < g.To {
				t.Errorf("row at %d lies in the gap [%d, %d) of %d lost packets", row.From, g.From, g.To, g.Lost)
			}
		}
	}
}
