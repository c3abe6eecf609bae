package replay

import (
	"context"
	"sync"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Clock is the wall clock a Player paces by; tests inject their own.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// WallClock is the real clock.
var WallClock Clock = wallClock{}

// PlayerOptions shape a Player.
type PlayerOptions struct {
	// Speed is how many nanoseconds of recorded time pass per nanosecond
	// of wall time; 0 (or less) plays as fast as possible.
	Speed float64
	// Start is the recorded time the replay starts at (elements before it
	// are delivered at once); End (Forever: none) the time it ends at
	// (elements after it — ends of tuples that outlast the replay — are
	// delivered at once too).
	Start, End algebra.Time
	// Clock paces the replay (default: the wall clock).
	Clock Clock
	// Paused starts the player paused.
	Paused bool
	// Heartbeat, when positive, is how often (in wall time) a player
	// waiting for its next element lets time pass in the network: it
	// delivers an element of the relation Heartbeat (which no statement
	// reads: the interpreter's RunSource skips it, but moves time, so Clock ticks and
	// results that wait on time come paced too). The player also
	// delivers one at End, so a replay lasts until then.
	Heartbeat time.Duration
}

// Heartbeat names the relation of a player's heartbeat elements.
const Heartbeat = ""

var heartbeatRec = &stream.Rec{}

// Player is a paced, time-ordered source: it delivers the elements of
// another source no sooner than their recorded time, mapped onto the wall
// clock at the chosen speed, and may be paused, stepped one instant at a
// time, sped up or slowed down, and stopped — from any goroutine while
// another reads it. It is an stream.Source: a network (and a display) runs
// from it as from any other.
type Player struct {
	src   stream.Source
	ctx   context.Context
	clock Clock

	mu      sync.Mutex
	speed   float64
	start   algebra.Time
	end     algebra.Time
	anchorW time.Time    // wall time of the anchor
	anchorT algebra.Time // recorded time at the anchor
	paused  bool
	steps   int
	stopped bool
	started bool
	pos     algebra.Time // time of the last element delivered
	nextT   algebra.Time // time of the element Next waits to deliver
	waiting bool
	wake    chan struct{}

	ahead   bool
	aheadR  string
	aheadE  stream.Elem
	aheadOK bool
	beat    time.Duration
	ended   bool // the source is exhausted
	n       uint64
}

// NewPlayer makes a player over src; ctx ends it (as Stop does).
func NewPlayer(ctx context.Context, src stream.Source, opts PlayerOptions) *Player {
	if opts.Clock == nil {
		opts.Clock = WallClock
	}
	return &Player{src: src, ctx: ctx, clock: opts.Clock, speed: opts.Speed, start: opts.Start, end: opts.End,
		paused: opts.Paused, pos: opts.Start, anchorT: opts.Start, wake: make(chan struct{}, 1), beat: opts.Heartbeat}
}

func (p *Player) notify() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// virtual is the recorded time the replay has reached (caller holds mu).
func (p *Player) virtual(now time.Time) algebra.Time {
	if p.paused || !p.started {
		return p.anchorT
	}
	if p.speed <= 0 {
		return algebra.Forever
	}
	d := float64(now.Sub(p.anchorW)) * p.speed
	if d >= float64(algebra.Forever-p.anchorT) {
		return algebra.Forever
	}
	return p.anchorT + algebra.Time(d)
}

// Next delivers the next element once its time has come.
func (p *Player) Next() (string, stream.Elem, bool, error) {
	if !p.ahead && !p.ended {
		rel, e, ok, err := p.src.Next()
		if err != nil {
			return rel, e, ok, err
		}
		if !ok {
			p.ended = true
			if p.beat <= 0 || p.end == algebra.Forever || p.Position() >= p.end {
				return rel, e, ok, err
			}
			// A last heartbeat at the end: the replay lasts until then.
			rel, e = Heartbeat, stream.Elem{Kind: stream.Event, T: p.end, Rec: heartbeatRec}
		}
		p.aheadR, p.aheadE, p.aheadOK, p.ahead = rel, e, ok, true
	}
	if !p.ahead {
		return "", stream.Elem{}, false, nil
	}
	e := p.aheadE
	p.mu.Lock()
	if p.speed <= 0 && p.started && !p.paused && !p.stopped && (p.aheadR != Heartbeat || !p.ended) {
		// As fast as possible: no clock to consult (the context is
		// looked at every few thousand elements).
		p.n++
		if p.n&4095 != 0 || p.ctx.Err() == nil {
			p.pos = max(p.pos, e.T)
			p.mu.Unlock()
			p.ahead = false
			return p.aheadR, e, true, nil
		}
	}
	p.nextT, p.waiting = e.T, true
	p.mu.Unlock()
	for {
		p.mu.Lock()
		now := p.clock.Now()
		if !p.started {
			p.started, p.anchorW = true, now
		}
		if p.stopped || p.ctx.Err() != nil {
			p.stopped = true
			p.mu.Unlock()
			return "", stream.Elem{}, false, nil
		}
		immediate := e.T <= p.start || e.T > p.end
		if p.aheadR == Heartbeat && p.ended {
			immediate = false // the last heartbeat, at End, waits
		}
		if p.paused && p.steps > 0 && !immediate && e.T > p.anchorT {
			// A step: the replay moves to this element's instant.
			p.steps--
			p.anchorT = e.T
		}
		v := p.virtual(now)
		if immediate || e.T <= v {
			if e.T > p.pos {
				p.pos = e.T
			}
			p.waiting = false
			p.mu.Unlock()
			p.ahead = false
			return p.aheadR, e, true, nil
		}
		var wait <-chan time.Time
		beat := false
		if !p.paused {
			d := time.Duration(float64(e.T-v) / p.speed)
			if d < time.Millisecond {
				d = time.Millisecond
			}
			if p.beat > 0 && d > p.beat {
				d, beat = p.beat, true
			}
			wait = p.clock.After(d)
		}
		p.mu.Unlock()
		select {
		case <-wait:
			if beat {
				// Let the network's time reach where the replay is.
				p.mu.Lock()
				v := p.virtual(p.clock.Now())
				ok := v > p.pos && v < e.T
				if ok {
					p.pos = v
				}
				p.mu.Unlock()
				if ok {
					return Heartbeat, stream.Elem{Kind: stream.Event, T: v, Rec: heartbeatRec}, true, nil
				}
			}
		case <-p.wake:
		case <-p.ctx.Done():
		}
	}
}

// Position is the recorded time of the last element delivered.
func (p *Player) Position() algebra.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pos
}

// Paused reports whether the player is paused.
func (p *Player) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// Speed is the current speed (0: as fast as possible).
func (p *Player) Speed() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.speed
}

// Pause stops the replay's time until Resume (or Step).
func (p *Player) Pause() {
	p.mu.Lock()
	if !p.paused {
		p.anchorT = p.virtualCapped()
		p.paused = true
	}
	p.mu.Unlock()
	p.notify()
}

// virtualCapped is the replay's time, no later than the next element's
// when time runs freely (so pausing does not skip ahead).
func (p *Player) virtualCapped() algebra.Time {
	v := p.virtual(p.clock.Now())
	if p.waiting && v > p.nextT {
		v = p.nextT
	}
	return max(v, p.pos)
}

// Resume lets the replay's time run again from where it stopped.
func (p *Player) Resume() {
	p.mu.Lock()
	if p.paused {
		p.paused, p.steps = false, 0
		p.anchorW = p.clock.Now()
	}
	p.mu.Unlock()
	p.notify()
}

// TogglePause pauses a running player and resumes a paused one.
func (p *Player) TogglePause() {
	if p.Paused() {
		p.Resume()
	} else {
		p.Pause()
	}
}

// Step, while paused, lets the next instant's elements through.
func (p *Player) Step() {
	p.mu.Lock()
	if p.paused {
		p.steps++
	}
	p.mu.Unlock()
	p.notify()
}

// SetSpeed changes the speed, keeping the replay's current time.
func (p *Player) SetSpeed(speed float64) {
	p.mu.Lock()
	if !p.paused && p.started {
		now := p.clock.Now()
		p.anchorT, p.anchorW = p.virtualCapped(), now
	}
	p.speed = speed
	p.mu.Unlock()
	p.notify()
}

// Stop ends the replay: Next reports the end.
func (p *Player) Stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.notify()
}
