// Package progress draws a one-line progress bar on a terminal (for long
// replays, exports and imports), and nothing at all when the output is not
// a terminal, so logs and pipes stay clean; Keys delivers the key presses
// that steer an interactive replay.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal (for progress bars and keys).
func IsTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Bar is a progress line redrawn in place with carriage returns.
type Bar struct {
	mu      sync.Mutex
	w       io.Writer
	on      bool
	width   int
	shown   string
	last    time.Time
	every   time.Duration
	cleared bool
	// cols is the terminal's width now (0: unknown): a line never
	// reaches the last column, so that it never wraps — a wrapped line
	// is not redrawn in place nor erased by a carriage return.
	cols func() int
}

// New makes a bar writing to w; when enabled is false (w is not a
// terminal) it draws nothing. A bar on a terminal fits its width, asked
// again at each redraw (the terminal may be resized).
func New(w io.Writer, enabled bool) *Bar {
	b := &Bar{w: w, on: enabled, width: 30, every: 100 * time.Millisecond, cols: func() int { return 0 }}
	if f, ok := w.(*os.File); ok {
		b.cols = func() int {
			if c, _, err := term.GetSize(int(f.Fd())); err == nil {
				return c
			}
			return 0
		}
	}
	return b
}

// MinBar is the narrowest the bar itself gets before its note is cut.
const MinBar = 10

// Fit renders a bar (as Line) in fewer than cols columns: the bar
// narrows to MinBar, then the note is cut with "…", then dropped; cols
// 0 is unknown (no limit).
func Fit(frac float64, width int, note string, cols int) string {
	line := Line(frac, width, note)
	if cols <= 0 || utf8.RuneCountInString(line) < cols {
		return line
	}
	room := cols - 1
	fixed := 2 + 5 // brackets, " 100%"
	noteW := 0
	if note != "" {
		noteW = 2 + utf8.RuneCountInString(note)
	}
	w := max(MinBar, room-fixed-noteW)
	if w < width {
		width = w
	}
	if left := room - fixed - width - 2; note != "" && left < utf8.RuneCountInString(note) {
		if left < 2 {
			note = ""
		} else {
			note = string([]rune(note)[:left-1]) + "…"
		}
	}
	line = Line(frac, width, note)
	if r := []rune(line); len(r) > room {
		line = string(r[:max(0, room)])
	}
	return line
}

// Enabled reports whether the bar draws.
func (b *Bar) Enabled() bool { return b != nil && b.on }

// Line renders a bar: the fraction done (clamped to [0, 1]) and a note.
func Line(frac float64, width int, note string) string {
	frac = max(0, min(1, frac))
	full := int(frac * float64(width))
	var s strings.Builder
	s.WriteByte('[')
	s.WriteString(strings.Repeat("=", full))
	if full < width {
		s.WriteByte('>')
		s.WriteString(strings.Repeat(" ", width-full-1))
	}
	fmt.Fprintf(&s, "] %3d%%", int(frac*100))
	if note != "" {
		s.WriteString("  " + note)
	}
	return s.String()
}

// Update redraws the bar if it changed (at most ten times a second, unless
// force).
func (b *Bar) Update(frac float64, note string, force bool) {
	if !b.Enabled() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if !force && now.Sub(b.last) < b.every {
		return
	}
	line := Fit(frac, b.width, note, b.cols())
	if line == b.shown && !b.cleared {
		return
	}
	b.last, b.shown, b.cleared = now, line, false
	fmt.Fprintf(b.w, "\r%s\x1b[K", line)
}

// Clear erases the bar (before other output is written to the terminal);
// the next Update draws it again.
func (b *Bar) Clear() {
	if !b.Enabled() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.cleared && b.shown != "" {
		fmt.Fprint(b.w, "\r\x1b[K")
		b.cleared = true
	}
}

// Redraw draws the last line again after a Clear.
func (b *Bar) Redraw() {
	if !b.Enabled() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cleared && b.shown != "" {
		fmt.Fprintf(b.w, "\r%s\x1b[K", b.shown)
		b.cleared = false
	}
}

// Done erases the bar for good.
func (b *Bar) Done() {
	b.Clear()
	if b.Enabled() {
		b.mu.Lock()
		b.on = false
		b.mu.Unlock()
	}
}

// Guard wraps a writer sharing the terminal with the bar: each write
// clears the bar first and draws it again after.
func (b *Bar) Guard(w io.Writer) io.Writer {
	if !b.Enabled() {
		return w
	}
	return guarded{b, w}
}

type guarded struct {
	b *Bar
	w io.Writer
}

func (g guarded) Write(p []byte) (int, error) {
	g.b.Clear()
	n, err := g.w.Write(p)
	g.b.Redraw()
	return n, err
}

// Follow redraws the bar ten times a second with what state reports (ok
// false: nothing yet), until the returned stop is called.
func (b *Bar) Follow(state func() (frac float64, note string, ok bool)) (stop func()) {
	if !b.Enabled() {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if frac, note, ok := state(); ok {
				b.Update(frac, note, false)
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
