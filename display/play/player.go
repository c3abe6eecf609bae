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
	// Speed is subject time per real time; 0 plays as fast as the reader
	// takes elements, with no clock (the position is then the last
	// element's time).
	Speed float64
	// Start, when set, is where play begins: elements before it are
	// played at once. Nil: at the first element.
	Start *algebra.Time
	// End is where play stops (0 or Forever: at the last element): the
	// position never passes it.
	End algebra.Time
	// Drain makes End the end of a span played through rather than a
	// place to hold: elements after End come at once (the ends of tuples
	// that outlast a replay), the source's end is reported once the
	// position reaches End, with a heartbeat at End, and heartbeats carry
	// the position itself (the network moves to it) rather than the
	// instant after it. A replay streaming results drains; a display,
	// which keeps its last picture at End, does not.
	Drain bool
	// Paused starts the player paused.
	Paused bool
	// Clock is real time (default RealClock).
	Clock Clock
	// Beat is the real time between heartbeats (default 1/30 s; NoBeats:
	// none).
	Beat time.Duration
	// Local makes Note print wall-clock times in the local time zone
	// (--tz local), not UTC.
	Local bool
}

// NoBeats, as Options.Beat, turns heartbeats off.
const NoBeats time.Duration = -1

// Heartbeat names the relation of a player's heartbeat elements, which
// no statement reads: the interpreter's RunSource skips them but reads
// them as time passing.
const Heartbeat = ""

// Speed limits of a paced player.
const (
	MinSpeed = 1.0 / 1024
	MaxSpeed = 1 << 30
)

// Player plays a time-ordered source at a chosen speed: it is a
// stream.Source whose Next releases each element once the play position
// has reached the element's time. Its controls (Pause, Faster, Step,
// Seek, Stop…) may be called from any goroutine; Next from one.
type Player struct {
	src   stream.Source
	clock Clock
	beat  time.Duration // < 0: no heartbeats
	drain bool
	ctx   context.Context
	tf    algebra.TimeFormat // Note's times: TimeAuto, local with Options.Local

	mu      sync.Mutex
	start   algebra.Time // where play began
	pos     algebra.Time // play position at anchor
	anchor  time.Time
	speed   float64 // 0: as fast as possible
	paused  bool
	started bool // pos is known
	stopped bool
	end     algebra.Time
	last    algebra.Time // the last element's time, once the source is done
	out     algebra.Time // the time of the last element (or heartbeat) handed out
	beatAt  algebra.Time // the last heartbeat's time
	beatWas time.Time    // and the real time it was given
	forced  bool         // a control moved the position: a heartbeat now
	n       uint64       // elements handed out as fast as possible
	wake    chan struct{}
	waiting chan struct{}

	// Written only by Next, under mu; Next reads them without it.
	done bool // the source is exhausted
	peek item
	have bool // peek holds the next element
}

// NewPlayer makes a player of src; ctx ends a waiting Next.
func NewPlayer(ctx context.Context, src stream.Source, o Options) *Player {
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Beat == 0 {
		o.Beat = time.Second / 30
	}
	if o.End == 0 {
		o.End = algebra.Forever
	}
	tf := algebra.TimeAuto
	if o.Local {
		tf |= algebra.TimeLocal
	}
	p := &Player{src: src, clock: o.Clock, beat: o.Beat, drain: o.Drain, ctx: ctx, tf: tf, speed: clampSpeed(o.Speed), start: algebra.Beginning,
		paused: o.Paused, end: o.End, last: algebra.Forever, out: algebra.Beginning, beatAt: algebra.Beginning,
		wake: make(chan struct{}, 1), waiting: make(chan struct{}, 1)}
	p.anchor = p.clock.Now()
	if o.Start != nil {
		p.start, p.pos, p.started = *o.Start, *o.Start, true
	}
	return p
}

// clampSpeed keeps a pace within the limits; 0 (or less) is as fast as
// possible.
func clampSpeed(s float64) float64 {
	if s <= 0 {
		return 0
	}
	return max(MinSpeed, min(MaxSpeed, s))
}

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
	switch {
	case p.paused:
	case p.speed == 0:
		t = max(t, p.out)
	default:
		d := float64(p.clock.Now().Sub(p.anchor)) * p.speed
		if d >= float64(algebra.Forever-t) || math.IsInf(d, 0) {
			t = algebra.Forever
		} else if d > 0 {
			t += algebra.Time(d)
		}
	}
	return min(t, p.end, p.last)
}

// ready reports whether the next element may be handed out at position
// now.
func (p *Player) ready(now algebra.Time) bool {
	t := p.peek.e.T
	switch {
	case p.drain && t > p.end:
		return true
	case p.speed == 0 && !p.paused && p.started:
		return t <= p.end
	}
	return t <= now
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
	Now algebra.Time
	// Speed is the pace (0: as fast as possible).
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

// Paused reports whether the player is paused (State's Paused).
func (p *Player) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// Speed is the pace (State's Speed; 0: as fast as possible).
func (p *Player) Speed() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.speed
}

// Pause stops the position until Resume (Step still moves it).
func (p *Player) Pause() { p.setPaused(func(bool) bool { return true }) }

// Resume lets the position run again from where it stopped.
func (p *Player) Resume() { p.setPaused(func(bool) bool { return false }) }

// TogglePause pauses a playing player, resumes a paused one.
func (p *Player) TogglePause() { p.setPaused(func(paused bool) bool { return !paused }) }

func (p *Player) setPaused(f func(bool) bool) {
	p.mu.Lock()
	p.rebase()
	p.paused = f(p.paused)
	p.mu.Unlock()
	p.poke()
}

// Faster doubles the speed; Slower halves it (neither changes playing as
// fast as possible).
func (p *Player) Faster() { p.scaleSpeed(2) }
func (p *Player) Slower() { p.scaleSpeed(0.5) }

func (p *Player) scaleSpeed(f float64) {
	p.mu.Lock()
	s := p.speed * f
	p.mu.Unlock()
	if s > 0 {
		p.SetSpeed(s)
	}
}

// SetSpeed changes the speed (0: as fast as possible), keeping the
// position.
func (p *Player) SetSpeed(s float64) {
	p.mu.Lock()
	p.rebase()
	p.speed = clampSpeed(s)
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
	} else if p.started && p.speed > 0 {
		p.pos += algebra.Time(float64(max(p.beat, time.Second/30)) * p.speed)
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

// Stop ends play: Next reports the end of the source.
func (p *Player) Stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.poke()
}

// Waiting receives a value each time Next waits with nothing to release
// and the heartbeat for the present position given: the network has then
// seen everything up to the position (tests synchronise on it).
func (p *Player) Waiting() <-chan struct{} { return p.waiting }

// Next is stream.Source's: the next element once the position has reached
// it, heartbeats (elements of relation Heartbeat) while waiting, ok false
// at the end of the source or after Stop, the context's error when it
// ends.
func (p *Player) Next() (string, stream.Elem, bool, error) {
	for {
		if !p.have && !p.done {
			rel, e, ok, err := p.src.Next()
			if err != nil {
				return "", stream.Elem{}, false, err
			}
			p.mu.Lock()
			// As fast as possible: no clock to read, and the context
			// looked at only every few thousand elements.
			if ok && p.speed == 0 && !p.paused && p.started && !p.stopped && (e.T <= p.end || p.drain) {
				if p.n++; p.n&4095 != 0 || p.ctx.Err() == nil {
					p.out = max(p.out, e.T)
					p.mu.Unlock()
					return rel, e, true, nil
				}
			}
			p.fetched(rel, e, ok)
		} else {
			p.mu.Lock()
		}
		if p.stopped {
			p.mu.Unlock()
			return "", stream.Elem{}, false, nil
		}
		if err := p.ctx.Err(); err != nil {
			p.mu.Unlock()
			return "", stream.Elem{}, false, err
		}
		now := p.now()
		if p.have && p.ready(now) {
			it := p.peek
			p.peek, p.have = item{}, false
			p.out = max(p.out, it.e.T)
			if it.rel == Heartbeat {
				p.beatAt = max(p.beatAt, it.e.T)
			}
			p.mu.Unlock()
			return it.rel, it.e, true, nil
		}
		if p.done && !p.have {
			p.mu.Unlock()
			return "", stream.Elem{}, false, nil
		}
		// A heartbeat at the position (draining) or just after it, so the
		// network decides everything before or up to it: at most one per
		// beat while playing, at once when paused or a control moved the
		// position; never back in time, never past the next element.
		beat := algebra.Next(now)
		if p.drain {
			beat = now
		}
		realNow := p.clock.Now()
		given := max(p.beatAt, p.out)
		caughtUp := p.beat < 0 || given >= beat
		if p.beat > 0 && p.started && !caughtUp && (!p.have || beat <= p.peek.e.T) &&
			(p.forced || p.paused || realNow.Sub(p.beatWas) >= p.beat) {
			p.beatAt, p.beatWas, p.forced, p.out = beat, realNow, false, beat
			p.mu.Unlock()
			return Heartbeat, stream.Elem{Kind: stream.Event, T: beat}, true, nil
		}
		var timer <-chan time.Time
		if !p.paused && p.speed > 0 {
			wait := time.Duration(math.MaxInt64)
			if p.beat > 0 {
				wait = p.beat - realNow.Sub(p.beatWas)
			}
			if p.have {
				if real := float64(p.peek.e.T-now) / p.speed; real < float64(wait) {
					wait = time.Duration(real)
				}
			}
			if wait < math.MaxInt64 {
				timer = p.clock.After(max(time.Millisecond, wait))
			}
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

// fetched takes what the source gave (caller holds mu): the next element,
// or its end — when draining with heartbeats, a last one at End stands in
// for the element, so play lasts until then.
func (p *Player) fetched(rel string, e stream.Elem, ok bool) {
	if ok {
		p.peek, p.have = item{rel, e}, true
		if !p.started {
			p.start, p.pos, p.started, p.anchor = e.T, e.T, true, p.clock.Now()
		}
		return
	}
	p.rebase()
	p.done = true
	p.last = max(p.pos, p.beatAt)
	if p.end != algebra.Forever {
		p.last = max(p.last, p.end)
		if p.drain && p.beat > 0 && p.out < p.end {
			p.peek, p.have = item{Heartbeat, stream.Elem{Kind: stream.Event, T: p.end}}, true
		}
	}
}
