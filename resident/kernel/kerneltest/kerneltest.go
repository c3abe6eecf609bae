// Package kerneltest holds what tests of the kernel resident share:
// skipping when kernel sensors cannot run, serializing the tests that
// load programs (across packages: they check the kernel's global list of
// programs), and building the test programs.
package kerneltest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/internal/testlock"
)

// Need skips the test, saying why, unless kernel sensors can run here
// (root, BPF, BTF, x86-64); else it holds a machine-wide lock until the
// test ends, so that no other test loads programs meanwhile.
func Need(t testing.TB) {
	t.Helper()
	if err := kernel.Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	if testing.Short() {
		t.Skip("skipping kernel test in -short mode")
	}
	testlock.Hold(t)
	// An earlier test's programs can outlive its last reference for a
	// moment (the kernel frees them after an RCU grace period): every
	// test starts from none.
	WaitPrograms(t, "none of our programs before the test", func(p []string) bool { return len(p) == 0 })
}

// WaitPrograms waits (up to 10 s) until ok holds of the kernel's listing
// of our programs — programs are freed shortly after their last
// reference goes — and returns the listing; the test fails, naming what
// it waited for, if that does not come.
func WaitPrograms(t testing.TB, what string, ok func([]string) bool) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		progs, err := kernel.OurPrograms()
		if err != nil {
			t.Fatal(err)
		}
		if ok(progs) {
			return progs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: our programs in the kernel are %v", what, progs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BuildC compiles a C program (statically when static) into the test's
// temporary directory; it skips the test when no C compiler is
// installed (.ci/run installs one).
func BuildC(t testing.TB, src string, static bool) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("skipping: no C compiler (cc) to build the test program")
	}
	out := filepath.Join(t.TempDir(), stem(src))
	args := []string{"-O1", "-o", out, src}
	if static {
		args = append([]string{"-static"}, args...)
	}
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("cc %s: %v\n%s", src, err, b)
	}
	return out
}

// BuildGo builds a one-file Go program (its source may have any
// extension) into the test's temporary directory.
func BuildGo(t testing.TB, src string) string {
	t.Helper()
	dir := t.TempDir()
	text, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/worktest\n\ngo 1.21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "work")
	goBin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	cmd := exec.Command(goBin, "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", src, err, b)
	}
	return out
}

func stem(path string) string {
	base := filepath.Base(path)
	if ext := filepath.Ext(base); ext != "" {
		base = base[:len(base)-len(ext)]
	}
	return base
}
