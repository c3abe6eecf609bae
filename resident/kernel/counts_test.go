package kernel_test

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
	"github.com/tqmon/tqmon/resident/wire"
)

// TestSessionCountsStartAtOpen: a session's counts (what the kernel
// wanted and dropped of each sensor) are what was produced while it was
// open, not since the resident started — a second session that enables
// nothing is not charged the first one's packets.
func TestSessionCountsStartAtOpen(t *testing.T) {
	kerneltest.Need(t)
	res := newRes(t)
	defer res.Close()
	const n = 20000
	pid := itoa(os.Getpid())

	// A session open throughout keeps the tracking (and the kernel's
	// counters) alive across the others.
	c0 := res.Local()
	defer c0.Close()
	c1 := res.Local()
	sys := sensorID(t, c1.Hello(), "Syscall")
	if err := c1.Send(&wire.Command{Kind: wire.CEnable, Sensor: sys, Entity: pid}); err != nil {
		t.Fatal(err)
	}
	wanted := func(c wire.Conn, atLeast uint64) uint64 {
		t.Helper()
		var w uint64
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			b, err := c.Recv()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range b.Counts {
				if k.Sensor == sys {
					w = k.Wanted
				}
			}
			if w >= atLeast && b.Applied > 0 {
				return w
			}
		}
		t.Fatalf("the session's Syscall count reached %d, not %d, in 10 s", w, atLeast)
		return 0
	}
	wanted(c1, 0) // the enable is in force
	for range n {
		unix.Getppid()
	}
	first := wanted(c1, n)
	c1.Close()

	c2 := res.Local()
	defer c2.Close()
	if err := c2.Send(&wire.Command{Kind: wire.CLease, Period: int64(5 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if second := wanted(c2, 0); second >= n/4 {
		t.Errorf("a second session enabling nothing is charged %d Syscall packets (the first session's %d)", second, first)
	}
}
