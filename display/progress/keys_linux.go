package progress

import (
	"os"

	"golang.org/x/sys/unix"
)

// Keys puts a terminal in cbreak mode (keys arrive one at a time,
// unechoed; output is untouched) and delivers its key presses; undo
// restores the terminal.
func Keys(f *os.File) (<-chan byte, func(), error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, nil, err
	}
	t := *old
	t.Lflag &^= unix.ICANON | unix.ECHO
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &t); err != nil {
		return nil, nil, err
	}
	keys := make(chan byte, 16)
	go func() {
		defer close(keys)
		buf := make([]byte, 1)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			if n == 1 {
				keys <- buf[0]
			}
		}
	}()
	undo := func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }
	return keys, undo, nil
}
