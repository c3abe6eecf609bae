package query_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/store/history"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1048576": 1 << 20, "512MiB": 512 << 20, "2GB": 2e9, "1.5G": 3 << 29,
		"64 MiB": 64 << 20, "10kB": 10000, "4KiB": 4096, "3b": 3, "1TiB": 1 << 40} {
		if got, err := query.ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "12 parsecs", "MiB", "1e30GB", "-1"} {
		if got, err := query.ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", in, got)
		}
	}
}

func TestDefaultMaxMemory(t *testing.T) {
	if d := query.DefaultMaxMemory(); d < 256<<20 {
		t.Errorf("DefaultMaxMemory() = %d", d)
	}
}

// TestWatchReportsHeap: the watchdog of a budget smaller than any heap
// reports the heap, and the next run within that budget stops with it.
func TestWatchReportsHeap(t *testing.T) {
	paper := filepath.Join(testkit.Root(t), "testdata", "paper")
	h, err := history.Load(paper)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := query.Compile(h.Catalog, []query.Source{{Name: "q", Text: testkit.ReadFile(t, filepath.Join(paper, "resumed_by_p1.tq"))}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := prog.RunHistory(h); err != nil {
		t.Fatal(err)
	}
	b := &exec.Budget{Limit: 1}
	defer query.Watch(b)()
	var me *exec.MemoryError
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		_, _, err := prog.WithBudget(b).RunHistory(h)
		if !errors.As(err, &me) {
			t.Fatalf("err = %v, want a *exec.MemoryError", err)
		}
		if me.Heap > 0 {
			return
		}
	}
	t.Errorf("the watchdog never reported the heap: %v", me)
}
