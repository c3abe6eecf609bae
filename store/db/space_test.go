package db

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
)

// tmpfs mounts a file system of size bytes for the test (root only).
func tmpfs(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// TestDiskFull: recording onto a file system that fills up stops with
// ErrDiskFull before badger can fault (it writes through memory maps: a
// full tmpfs was SIGBUS), keeps everything synced before, and the database
// reads in place. On a 2 MiB file system it stops at once.
func TestDiskFull(t *testing.T) {
	for _, c := range []struct {
		name string
		size int64
	}{{"2MiB", 2 << 20}, {"reserve+24MiB", DiskReserve + 24<<20}} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(tmpfs(t, c.size), "db")
			d, err := Create(dir, paperSpec(t))
			if err != nil {
				t.Fatal(err)
			}
			var synced uint64 // tuples
			commits := make(chan CommitInfo, 1<<16)
			w, err := d.NewWriter(WriterOptions{OnCommit: func(c CommitInfo) { commits <- c }})
			if err != nil {
				t.Fatal(err)
			}
			p, _ := w.Relation("Process")
			pad := strings.Repeat("x", 100)
			n := 0
			for ; n < 10_000_000 && err == nil; n++ {
				at := algebra.Time(10 * n)
				err = p.Whole(at, at+5, []algebra.Value{algebra.Entity(fmt.Sprintf("P%d-%s", n, pad)), running})
				if err == nil && n%2000 == 1999 {
					w.Advance(at + 6)
					err = w.Sync()
				}
			drain:
				for {
					select {
					case ci := <-commits:
						if ci.Synced {
							synced = ci.Tuples
						}
					default:
						break drain
					}
				}
			}
			if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "MiB free") {
				t.Fatalf("after %d tuples: %v; want the disk full", n, err)
			}
			t.Logf("stopped after %d tuples: %v", n, err)
			if cerr := w.Close(); !errors.Is(cerr, ErrDiskFull) {
				t.Errorf("writer's close: %v", cerr)
			}
			if err := d.Close(); err != nil {
				t.Errorf("database's close: %v", err)
			}
			d, err = Open(dir, Options{ReadOnly: true})
			if err != nil {
				t.Fatalf("reading in place: %v", err)
			}
			h, err := d.History(nil)
			d.Close()
			if err != nil {
				t.Fatal(err)
			}
			rows := h.Table("Process").Rows
			if uint64(len(rows)) < synced {
				t.Errorf("%d tuples read back, %d were synced", len(rows), synced)
			}
			if rep, err := Check(dir, Options{}); err != nil || !rep.OK() {
				t.Errorf("check: %v %v", err, rep.Damage)
			}
		})
	}
}
