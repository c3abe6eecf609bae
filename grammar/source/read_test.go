package source

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadFileBounded: a device, a directory or a text past MaxFileSize is
// an error naming the file (and the limit), read no further than the
// limit; "-" is stdin.
func TestReadFileBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.tq")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 1<<30); err != nil { // sparse: 1 GiB of NULs
		t.Fatal(err)
	}
	small := filepath.Join(dir, "q.tq")
	if err := os.WriteFile(small, []byte("retrieve (x = 1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.tq")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{fifo, fifo + " is a named pipe, not a regular file"},
		{"/dev/zero", "/dev/zero is a device, not a regular file"},
		{dir, dir + " is a directory, not a regular file"},
		{big, big + " is longer than 16777216 bytes, the most a source file may be"},
		{filepath.Join(dir, "nope"), "no such file or directory"},
	} {
		if _, err := ReadFile(c.path, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.path, err, c.want)
		}
	}
	if text, err := ReadFile(small, nil); err != nil || text != "retrieve (x = 1)\n" {
		t.Errorf("got %q, %v", text, err)
	}
	if text, err := ReadFile("-", strings.NewReader("stdin text")); err != nil || text != "stdin text" {
		t.Errorf("stdin: got %q, %v", text, err)
	}
	if _, err := ReadFile("-", strings.NewReader(strings.Repeat("x", MaxFileSize+1))); err == nil || err.Error() != "standard input is longer than 16777216 bytes, the most a source file may be" {
		t.Errorf("long stdin: %v", err)
	}
}
