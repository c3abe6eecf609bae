package kernel_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
)

// TestFollowBoundReported: a fork that finds the follow map full is not
// followed, and is not silent — it is counted as a lost Process record,
// so the run is incomplete. With room for one process (the target), the
// target's forks are refused: its children's getppid calls are missing,
// and the Process relation reports the loss.
func TestFollowBoundReported(t *testing.T) {
	kerneltest.Need(t)
	bin := kerneltest.BuildC(t, filepath.Join("..", "..", "cmd", "tqmon", "testdata", "forks.c"), true)
	q := `range of s is Syscall retrieve (s.Name) where s.Process = $target and s.Name = "getppid"`
	d, err := kernel.Describe(nil)
	if err != nil {
		t.Fatal(err)
	}
	parent := -1
	for i, a := range d.Catalog.Lookup("Process").Attrs {
		if a.Name == "Parent" {
			parent = i
		}
	}
	for _, tt := range []struct {
		entries   int
		calls     int
		incomplet bool
	}{{0, 143, false}, {1, 100, true}} {
		f := &exec.Follow{Rel: "Process", Type: "Process", Parent: parent}
		r := runCommandWith(t, kernel.Options{Follow: true, FollowEntries: tt.entries}, remote.LiveOptions{Follow: f}, []string{bin}, q)
		if got := len(r.results[0].Table.Rows); got != tt.calls {
			t.Errorf("follow map of %d: %d getppid calls, want %d", tt.entries, got, tt.calls)
		}
		lost := r.stats.Dropped["Process"]
		incomplete := errors.Is(r.stats.Err(), remote.ErrIncomplete)
		t.Logf("follow map of %d: %d Process records lost; %v", tt.entries, lost, r.stats.Err())
		if (lost > 0) != tt.incomplet || incomplete != tt.incomplet {
			t.Errorf("follow map of %d: %d Process records reported lost, run incomplete %v; want lost and incomplete %v", tt.entries, lost, incomplete, tt.incomplet)
		}
	}
}
