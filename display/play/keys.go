package play

import (
	"fmt"

	"github.com/tqmon/tqmon/algebra"
)

// Key acts on a key pressed during an interactive replay: space (or p)
// pauses and resumes, n (or .) steps one instant, + and - double and halve
// the speed, q (or Ctrl-C) stops.
func (p *Player) Key(k byte) {
	switch k {
	case ' ', 'p':
		p.TogglePause()
	case 'n', '.':
		p.Pause()
		p.Step()
	case '+', '=':
		p.Faster()
	case '-', '_':
		p.Slower()
	case 'q', 3: // q, Ctrl-C
		p.Stop()
	}
}

// Span is the subject time the player plays: from its start (the first
// element's time when Options.Start was not set) to its end.
func (p *Player) Span() algebra.Window {
	p.mu.Lock()
	defer p.mu.Unlock()
	return algebra.Window{From: p.start, To: p.end}
}

// Progress is how far through span the player is, from 0 to 1.
func (p *Player) Progress(span algebra.Window) float64 {
	if span.To <= span.From {
		return 0
	}
	pos := max(p.Now(), span.From)
	return float64(pos-span.From) / float64(span.To-span.From)
}

// NoteUnit is the precision a note gives times in: a thousandth of the
// span as a power of ten, from a nanosecond to a second (a three-hour
// replay shows whole seconds, a five-second one milliseconds).
func NoteUnit(span algebra.Window) int64 {
	d := int64(1)
	if span.To > span.From && span.To != algebra.Forever && span.From != algebra.Beginning {
		for d < 1e9 && d*10 <= (span.To-span.From)/1000 {
			d *= 10
		}
	}
	return d
}

// Note describes the player's position in span, its speed and whether it
// is paused, for a progress bar; wall-clock times print in UTC, or local
// time with Options.Local.
func (p *Player) Note(span algebra.Window) string {
	st := p.State()
	u := NoteUnit(span)
	at := func(t algebra.Time) string {
		if t != algebra.Beginning && t != algebra.Forever {
			t -= t % u
		}
		return algebra.FormatTime(t, p.tf)
	}
	note := at(max(st.Now, span.From)) + " / " + at(span.To)
	if st.Speed > 0 {
		note += fmt.Sprintf("  ×%g", st.Speed)
	} else {
		note += "  max"
	}
	if st.Paused {
		note += "  paused (space: resume, n: step)"
	}
	return note
}
