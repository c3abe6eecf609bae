package tqmon

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestExampleArgs: example paths missing from the working directory are
// replaced by extracted copies (both flag forms), paths that exist and
// other arguments pass through, and a second run rewrites nothing.
func TestExampleArgs(t *testing.T) {
	empty, dir := t.TempDir(), t.TempDir()
	t.Chdir(empty)
	args := []string{"query", "--history", "testdata/paper", "-f", "testdata/paper/resumed_by_p1.tq",
		"--display=testdata/kernel/cpus.display", "-e", "testdata/nosuch", "--format", "csv", "--", "testdata/paper"}
	got, err := ExampleArgs(args, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"query", "--history", filepath.Join(dir, "testdata/paper"), "-f", filepath.Join(dir, "testdata/paper/resumed_by_p1.tq"),
		"--display=" + filepath.Join(dir, "testdata/kernel/cpus.display"), "-e", "testdata/nosuch", "--format", "csv", "--", "testdata/paper"}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	for _, f := range []string{"testdata/paper/os.sdl", "testdata/paper/SendMessage.csv", "testdata/kernel/cpus.display"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	st, _ := os.Stat(filepath.Join(dir, "testdata/paper/os.sdl"))
	if _, err := ExampleArgs(args, dir); err != nil {
		t.Fatal(err)
	}
	if st2, _ := os.Stat(filepath.Join(dir, "testdata/paper/os.sdl")); !st2.ModTime().Equal(st.ModTime()) {
		t.Error("a second run rewrote an unchanged file")
	}
	// A path that exists on disk is the user's.
	os.MkdirAll(filepath.Join(empty, "testdata/paper"), 0o755)
	got, _ = ExampleArgs([]string{"--history", "testdata/paper"}, dir)
	if got[1] != "testdata/paper" {
		t.Errorf("an existing directory was replaced: %q", got)
	}
}
