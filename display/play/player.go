package play

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Options shape a Player.
type Options struct {
	// Speed is subject time per real time (default 1).
	Speed float64
	// Start, when set, is where play begins: elements before it are
	// played at once. Nil: at the first element.
	Start *algebra.Time
	// End is where play stops; Forever: at the last element.
	End algebra.Time
	// Paused starts the player paused.
	Paused bool
	// Clock is real time (default RealClock).
	Clock Clock
	// Beat is the real time between heartbeats (default 1/30 s).
	Beat time.Duration
}

// Speed limits.
const (
	MinSpeed = 1.0 / 1024
	MaxSpeed = 1 << 30
)

// Player plays a time-ordered source at a chosen speed: it is an
// stream.Source whose Next releases each element once the play position has
// reached the element's time. Its controls (Pause, Faster, Step, Seek…)
// may be called from any goroutine; Next from one.
type Player struct {
	src   stream.Source
	clock Clock
	beat  time.Duration
	ctx   context.Context

	mu      sync.Mutex
	pos     algebra.Time // play position at anchor
	anchor  time.Time
	speed   float64
	paused  bool
	started bool // pos is known
	end     algebra.Time
	last    algebra.Time // the last element's time, once the source is done
	done    bool         // the source is exhausted
	peek    item
	have    bool         // peek holds the next element
	beatAt  algebra.Time // the last heartbeat's time
	beatWas time.Time    // and the real time it was given
	forced  bool         // a control moved the position: a heartbeat now
	wake    chan struct{}
	waiting chan struct{}
}

// NewPlayer makes a player of src; ctx ends a waiting Next.
func NewPlayer(ctx context.Context, src stream.Source, o Options) *Player {
	if o.Speed <= 0 {
		o.Speed = 1
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Beat <= 0 {
		o.Beat = time.Second / 30
	}
	if o.End == 0 {
		o.End = algebra.Forever
	}
	p := &Player{src: src, clock: o.Clock, beat: o.Beat, ctx: ctx, speed: clampSpeed(o.Speed),
		paused: o.Paused, end: o.End, last: algebra.Forever, beatAt: algebra.Beginning,
		wake: make(chan struct{}, 1), waiting: make(chan struct{}, 1)}
	p.anchor = p.clock.Now()
	if o.Start != nil {
		p.pos, p.started = *o.Start, true
	}
	return p
}

func clampSpeed(s float64) float64 { return max(MinSpeed, min(MaxSpeed, s)) }

// Now is the play position: the subject time the display shows.
// algebra.Beginning until the first element is known.
func (p *Player) Now() algebra.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.now()
}

func (p *Player) now() algebra.Time {
	if !p.started {
		return algebra.Beginning
	}
	t := p.pos
	if !p.paused {
		d := float64(p.clock.Now().Sub(p.anchor)) * p.speed
		if d >= float64(algebra.Forever-t) || math.IsInf(d, 0) {
			t = algebra.Forever
		} else if d > 0 {
			t += algebra.Time(d)
		}
	}
	return min(t, p.end, p.last)
}

// rebase makes the current position the anchor (before a change of speed
// or pause).
func (p *Player) rebase() {
	p.pos = p.now()
	p.anchor = p.clock.Now()
}

func (p *Player) poke() {
	p.mu.Lock()
	p.forced = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// State is the player's state for a status line.
type State struct {
	Now    algebra.Time
	Speed  float64
	Paused bool
	// Ended: every element has been played.
	Ended bool
}

// State reports the player's state.
func (p *Player) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return State{Now: p.now(), Speed: p.speed, Paused: p.paused, Ended: p.done && !p.have}
}

// TogglePause pauses a playing player, resumes a paused one.
func (p *Player) TogglePause() {
	p.mu.Lock()
	p.rebase()
	p.paused = !p.paused
	p.mu.Unlock()
	p.poke()
}

// Faster doubles the speed; Slower halves it.
func (p *Player) Faster() { p.setSpeed(2) }
func (p *Player) Slower() { p.setSpeed(0.5) }

func (p *Player) setSpeed(f float64) {
	p.mu.Lock()
	p.rebase()
	p.speed = clampSpeed(p.speed * f)
	p.mu.Unlock()
	p.poke()
}

// Step moves the position to the next element's time (the next change);
// with none known yet, by one frame's worth of subject time.
func (p *Player) Step() {
	p.mu.Lock()
	p.rebase()
	if p.have {
		p.pos = max(p.pos, p.peek.e.T)
	} else if p.started {
		p.pos += algebra.Time(float64(p.beat) * p.speed)
	}
	p.mu.Unlock()
	p.poke()
}

// Seek moves the position forward to t (never back: what was played
// stays played).
func (p *Player) Seek(t algebra.Time) {
	p.mu.Lock()
	p.rebase()
	if !p.started || t > p.pos {
		p.pos, p.started = t, true
	}
	p.mu.Unlock()
	p.poke()
}

// Waiting receives a value each time Next waits with nothing to release
// and the heartbeat for the present position given: the network has then
// seen everything up to the position (tests synchronise on it).
func (p *Player) Waiting() <-chan struct{} { return p.waiting }

// Next is stream.Source's: the next element once the position has reached
// it, heartbeats (elements of relation "", which RunSource skips but reads
// as time passing) while waiting, ok false at the end of the source, the
// context's error when it ends.
func (p *Player) Next() (string, stream.Elem, bool, error) {
	for {
		if err := p.ctx.Err(); err != nil {
			return "", stream.Elem{}, false, err
		}
		p.mu.Lock()
		if !p.have && !p.done {
			p.mu.Unlock()
			rel, e, ok, err := p.src.Next()
			if err != nil {
				return "", stream.Elem{}, false, err
			}
			p.mu.Lock()
			if ok {
				p.peek, p.have = item{rel, e}, true
				if !p.started {
					p.pos, p.started, p.anchor = e.T, true, p.clock.Now()
				}
			} else {
				p.rebase()
				p.done = true
				p.last = max(p.pos, p.beatAt)
				if p.end != algebra.Forever {
					p.last = max(p.last, p.end)
				}
			}
		}
		now := p.now()
		if p.have && p.peek.e.T <= now {
			it := p.peek
			p.peek, p.have = item{}, false
			p.mu.Unlock()
			return it.rel, it.e, true, nil
		}
		if p.done {
			p.mu.Unlock()
			return "", stream.Elem{}, false, nil
		}
		// A heartbeat just after the position, so the network decides
		// everything up to it: at most one per beat while playing, at once
		// when paused or a control moved the position.
		beat := algebra.Next(now)
		realNow := p.clock.Now()
		due := p.forced || p.paused || realNow.Sub(p.beatWas) >= p.beat
		if p.started && beat > p.beatAt && (!p.have || beat <= p.peek.e.T) && due {
			p.beatAt, p.beatWas, p.forced = beat, realNow, false
			p.mu.Unlock()
			return "", stream.Elem{Kind: stream.Event, T: beat}, true, nil
		}
		caughtUp := p.beatAt >= beat
		var timer <-chan time.Time
		if !p.paused {
			wait := p.beat - realNow.Sub(p.beatWas)
			if p.have {
				real := time.Duration(float64(p.peek.e.T-now) / p.speed)
				wait = min(wait, real)
			}
			timer = p.clock.After(max(time.Millisecond, wait))
		}
		p.mu.Unlock()
		if caughtUp {
			select {
			case p.waiting <- struct{}{}:
			default:
			}
		}
		select {
		case <-timer:
		case <-p.wake:
		case <-p.ctx.Done():
			return "", stream.Elem{}, false, p.ctx.Err()
		}
	}
}
