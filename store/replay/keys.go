package replay

import (
	"fmt"
	"sync"

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
		if !p.Paused() {
			p.Pause()
		}
		p.Step()
	case '+', '=':
		if s := p.Speed(); s > 0 {
			p.SetSpeed(s * 2)
		}
	case '-', '_':
		if s := p.Speed(); s > 0 {
			p.SetSpeed(s / 2)
		}
	case 'q', 3: // q, Ctrl-C
		p.Stop()
	}
}

// Span is the recorded time the player plays: from its start to its end.
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
	pos := max(p.Position(), span.From)
	return float64(pos-span.From) / float64(span.To-span.From)
}

// Note describes the player's position in span, its speed and whether it
// is paused, for a progress bar.
func (p *Player) Note(span algebra.Window) string {
	note := algebra.FormatTime(max(p.Position(), span.From), algebra.TimeClock) + " / " + algebra.FormatTime(span.To, algebra.TimeClock)
	if s := p.Speed(); s > 0 {
		note += fmt.Sprintf("  ×%g", s)
	} else {
		note += "  max"
	}
	if p.Paused() {
		note += "  paused (space: resume, n: step)"
	}
	return note
}

// Controls steer the player of a run that has not started yet (Options
// Player: Set) from other goroutines: keys pressed, a progress bar.
type Controls struct {
	mu sync.Mutex
	p  *Player
}

// Set is the run's Options.Player.
func (c *Controls) Set(p *Player) {
	c.mu.Lock()
	c.p = p
	c.mu.Unlock()
}

func (c *Controls) player() *Player {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.p
}

// Key acts on a key pressed (Player.Key), once the player exists.
func (c *Controls) Key(k byte) {
	if p := c.player(); p != nil {
		p.Key(k)
	}
}

// State is the player's progress through its span and its note (ok
// false: no player yet).
func (c *Controls) State() (frac float64, note string, ok bool) {
	p := c.player()
	if p == nil {
		return 0, "", false
	}
	return p.Progress(p.Span()), p.Note(p.Span()), true
}
