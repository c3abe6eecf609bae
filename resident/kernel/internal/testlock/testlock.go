// Package testlock serializes the tests that load kernel programs, across
// test processes (packages run in parallel): they check the kernel's
// global list of programs.
package testlock

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

var mu sync.Mutex

// Hold takes the machine-wide lock until the test ends.
func Hold(t testing.TB) {
	t.Helper()
	mu.Lock()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "tqmon-kernel-tests.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		mu.Unlock()
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		mu.Unlock()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
		mu.Unlock()
	})
}
