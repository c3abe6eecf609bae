package record

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/store/db"
)

// TestTapStartCommitsWindow: once a recording has attached, a reader of
// the database being recorded finds its window — empty, from the
// observation's start — before the first sync of what it observed, so a
// query then answers over that window (nothing) rather than over an
// unknown span.
func TestTapStartCommitsWindow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	d, err := db.Create(dir, db.Spec{Name: "os.sdl", Text: ossensors.SDL})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	synced := make(chan db.CommitInfo, 4)
	w, err := d.NewWriter(db.WriterOptions{OnCommit: func(c db.CommitInfo) { synced <- c }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tp, err := NewTap(DB(w), []string{"Process"})
	if err != nil {
		t.Fatal(err)
	}
	tp.Start(1000)
	select {
	case c := <-synced:
		if !c.Synced {
			t.Fatal("the start was not synced")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing committed at the start")
	}
	r, err := db.Open(dir, db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if win := r.Window(); !r.Live() || win == nil || *win != (algebra.Window{From: 1000, To: 1000}) {
		t.Fatalf("live %v, window %v; want (1000, 1000)", r.Live(), win)
	}
}
