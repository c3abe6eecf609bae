package subject

import (
	"io"
	"os"

	"github.com/tqmon/tqmon/display/progress"
	"github.com/tqmon/tqmon/store/replay"
)

// ReplayTerminal is a replay's terminal: a progress bar on stderr that
// follows the player, and, when stdin is a terminal, its keys (space
// pauses, n steps, +/- change speed, q stops) driving the player.
type ReplayTerminal struct {
	Controls replay.Controls
	bar      *progress.Bar
	stop     func()
	restore  func()
}

// StartReplayTerminal starts the bar and the keys; Out is where results go
// so that they do not tear the bar; Done restores the terminal.
func StartReplayTerminal(stdin *os.File, stderr io.Writer) *ReplayTerminal {
	t := &ReplayTerminal{bar: progress.New(stderr, progress.IsTerminal(stderr)), restore: func() {}}
	t.stop = t.bar.Follow(t.Controls.State)
	if progress.IsTerminal(stdin) {
		if keys, undo, err := progress.Keys(stdin); err == nil {
			t.restore = undo
			go func() {
				for k := range keys {
					t.Controls.Key(k)
				}
			}()
		}
	}
	return t
}

// Out guards w from the bar.
func (t *ReplayTerminal) Out(w io.Writer) io.Writer { return t.bar.Guard(w) }

// Done restores the terminal and clears the bar.
func (t *ReplayTerminal) Done() {
	t.restore()
	t.stop()
	t.bar.Done()
}
