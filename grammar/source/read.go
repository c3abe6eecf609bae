package source

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxFileSize is the largest source text ReadFile reads: 16 MiB, far
// more than any query file or display spec.
const MaxFileSize = 16 << 20

// ReadFile reads the source text in the file at path, "-" being stdin
// (unless stdin is nil). A
// path that is not a regular file (a device such as /dev/zero, a named
// pipe, a directory) is an error naming what it is, and is not read; a
// text longer than MaxFileSize is an error once that much is read, never
// held whole.
func ReadFile(path string, stdin io.Reader) (string, error) {
	var r io.Reader = stdin
	if path != "-" || stdin == nil {
		// Opened without blocking (a named pipe would), then checked.
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return "", err
		}
		if err := regular(fi, path); err != nil {
			return "", err
		}
		r = f
	} else {
		path = "standard input"
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return "", fmt.Errorf("%s is longer than %d bytes, the most a source file may be", path, MaxFileSize)
	}
	return string(data), nil
}

// CheckRegular checks that path (after symbolic links) is a regular file:
// a directory, named pipe, device or socket is an error naming what it
// is (calling the file name), so it is never read (a pipe would block, a
// device may never end).
func CheckRegular(path, name string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return regular(fi, name)
}

func regular(fi os.FileInfo, name string) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch m := fi.Mode(); {
	case m.IsDir():
		what = "a directory"
	case m&os.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&os.ModeSocket != 0:
		what = "a socket"
	case m&os.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%s is %s, not a regular file", name, what)
}
