package replay

import (
	"sync"

	"github.com/tqmon/tqmon/display/play"
)

// Controls steer the player of a run that has not started yet (Options
// Player: Set) from other goroutines: keys pressed, a progress bar.
type Controls struct {
	mu sync.Mutex
	p  *play.Player
}

// Set is the run's Options.Player.
func (c *Controls) Set(p *play.Player) {
	c.mu.Lock()
	c.p = p
	c.mu.Unlock()
}

func (c *Controls) player() *play.Player {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.p
}

// Key acts on a key pressed (play.Player's Key), once the player exists.
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
