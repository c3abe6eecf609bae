package kernel_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
)

// TestEntSelBoundFallsBack tries to break the bound of processes selected
// by their command at once (bpfgen.EntSelEntries, shrunk here to 4): a
// process and 12 children, all alive at once and all named NAME, each
// open one file; `p.Command = NAME` enables FileOpen for them in the
// kernel. Past the bound a process cannot be recorded, and FileOpen falls
// back to every process: every open is still in the results — the same
// as with the default bound and as without selections in the kernel
// (NoSelections: the monitor selects) — the run is complete, and the
// fallback is reported (Stats, the log). Before, the 9 children past the
// bound were silently not traced: their opens were missing. The same
// with 6 processes so named already running when the selection starts
// (waiting, opening nothing): the resident cannot record them all and
// falls back itself.
func TestEntSelBoundFallsBack(t *testing.T) {
	kerneltest.Need(t)
	bin := kerneltest.BuildC(t, "testdata/spawn.c", true)
	dir := t.TempDir()
	name := fmt.Sprintf("tqsp%d", os.Getpid()%1000000)
	prog := copyProgram(t, bin, dir, name)
	const k = 12
	want := []string{filepath.Join(dir, "p")}
	for i := range k {
		want = append(want, filepath.Join(dir, strconv.Itoa(i)))
	}
	slices.Sort(want)
	q := `range of p is Process range of f is FileOpen retrieve (f.Path) where f.Process = p.Process and p.Command = "` + name + `"`
	for _, c := range []struct {
		what     string
		opts     kernel.Options
		overflow bool
		running  int
	}{
		{what: "a bound of 4", opts: kernel.Options{EntSelEntries: 4}, overflow: true},
		{what: "a bound of 4, 6 running", opts: kernel.Options{EntSelEntries: 4}, overflow: true, running: 6},
		{what: "the default bound", overflow: false},
		{what: "no selections in the kernel", opts: kernel.Options{NoSelections: true}},
	} {
		var logged func() []string
		c.opts.Logf, logged = logCapture()
		var waiting []func()
		for range c.running {
			w := exec.Command(prog, "-w")
			in, err := w.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			waiting = append(waiting, func() { in.Close(); w.Wait() })
		}
		r := runCommand(t, c.opts, []string{prog, strconv.Itoa(k), dir}, q)
		for _, stop := range waiting {
			stop()
		}
		if !r.state.Success() {
			t.Fatalf("%s: spawn: %v", c.what, r.state)
		}
		got := column(r.results[0].Table, 0)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: opens %q\nwant %q", c.what, got, want)
		}
		if err := r.stats.Err(); err != nil {
			t.Errorf("%s: the run is incomplete: %v", c.what, err)
		}
		fellBack := slices.ContainsFunc(logged(), func(l string) bool {
			return strings.HasPrefix(l, "FileOpen: more than 4 processes are selected by their command")
		})
		if over := r.kstats["FileOpen"].Overflowed; over != c.overflow || fellBack != c.overflow {
			t.Errorf("%s: FileOpen fell back to every process: %v, logged %v; want %v (log: %q)", c.what, over, fellBack, c.overflow, logged())
		}
		t.Logf("%s: %d opens, %d FileOpen packets; fell back %v", c.what, len(got), r.stats.Packets["FileOpen"], r.kstats["FileOpen"].Overflowed)
	}
}
