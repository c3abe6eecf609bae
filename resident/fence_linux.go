package resident

import (
	"sync"

	"golang.org/x/sys/unix"
)

// membarrier(2) commands.
const (
	membarrierPrivateExpedited         = 1 << 3
	membarrierRegisterPrivateExpedited = 1 << 4
)

// membarrierOK registers the process for private expedited membarrier
// (once) and reports whether it can be used.
var membarrierOK = sync.OnceValue(func() bool {
	_, _, e := unix.Syscall(unix.SYS_MEMBARRIER, membarrierRegisterPrivateExpedited, 0, 0)
	return e == 0
})

// membarrier makes every thread of the process that is running pass
// through a full memory barrier before it returns (the kernel interrupts
// each CPU running one); threads not running pass through one when they
// are next scheduled. After it, every store a thread made before that
// point is visible, and every instruction it runs after that point —
// a clock read included — runs after membarrier was called.
func membarrier() {
	unix.Syscall(unix.SYS_MEMBARRIER, membarrierPrivateExpedited, 0, 0)
}
