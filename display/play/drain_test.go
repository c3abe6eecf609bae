package play

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// These tests play a span the way a replay does (Options.Drain).

// newFakeClock is a wall clock that moves only when told.
func newFakeClock() *FakeClock { return NewFakeClock(time.Unix(1000, 0)) }

// at is a start time for Options.
func at(t algebra.Time) *algebra.Time { return &t }

type listSource struct {
	ts []algebra.Time
	i  int
}

func (s *listSource) Next() (string, stream.Elem, bool, error) {
	if s.i == len(s.ts) {
		return "", stream.Elem{}, false, nil
	}
	t := s.ts[s.i]
	s.i++
	return "R", stream.Elem{Kind: stream.Event, T: t, Rec: &stream.Rec{From: t}}, true, nil
}

// collector reads a player from another goroutine.
type collector struct {
	mu   sync.Mutex
	got  []algebra.Time
	done chan struct{}
}

func collect(p *Player) *collector {
	c := &collector{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			_, e, ok, err := p.Next()
			if err != nil || !ok {
				return
			}
			c.mu.Lock()
			c.got = append(c.got, e.T)
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// settle waits until the reader has taken n elements, and checks it takes
// no more for a little while.
func (c *collector) settle(t *testing.T, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d elements delivered, want %d", what, c.count(), n)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if got := c.count(); got != n {
		t.Fatalf("%s: %d elements delivered, want %d", what, got, n)
	}
}

// TestPlayerPacing: elements come no sooner than their time at the chosen
// speed; pause holds them, step lets one instant through, speed changes
// keep the replay's time, and stop ends the replay.
func TestPlayerPacing(t *testing.T) {
	clock := newFakeClock()
	src := &listSource{ts: []algebra.Time{-5 * sec, 0, 1 * sec, 2 * sec, 2 * sec, 4 * sec, 8 * sec, 9 * sec, 20 * sec, 30 * sec}}
	p := NewPlayer(context.Background(), src, Options{Speed: 1, Start: at(0), End: 25 * sec, Clock: clock, Drain: true, Beat: NoBeats})
	c := collect(p)
	c.settle(t, 2, "at the start (before and at Start)")
	clock.Advance(999 * time.Millisecond)
	c.settle(t, 2, "just before 1s")
	clock.Advance(time.Millisecond)
	c.settle(t, 3, "at 1s")
	clock.Advance(time.Second)
	c.settle(t, 5, "at 2s (two elements at one instant)")
	p.Pause()
	clock.Advance(10 * time.Second)
	c.settle(t, 5, "paused")
	p.Step()
	c.settle(t, 6, "one step: the instant 4s")
	if pos := p.Now(); pos != 4*sec {
		t.Errorf("position %d, want 4s", pos)
	}
	p.Resume()
	clock.Advance(3 * time.Second) // 4s + 3s = 7s
	c.settle(t, 6, "resumed, at 7s")
	p.SetSpeed(2)
	clock.Advance(500 * time.Millisecond) // 7s + 1s = 8s
	c.settle(t, 7, "at speed 2, 8s")
	clock.Advance(500 * time.Millisecond) // 9s
	c.settle(t, 8, "at speed 2, 9s")
	p.Stop()
	<-c.done
	if n := c.count(); n != 8 {
		t.Errorf("stopped after %d elements, want 8", n)
	}
}

// TestPlayerMaxAndEnd: at speed 0 everything comes at once, and elements
// after End come at once at any speed.
func TestPlayerMaxAndEnd(t *testing.T) {
	clock := newFakeClock()
	p := NewPlayer(context.Background(), &listSource{ts: []algebra.Time{0, 5 * sec, 100 * sec}}, Options{Speed: 0, Start: at(0), End: algebra.Forever, Clock: clock, Drain: true, Beat: NoBeats})
	c := collect(p)
	<-c.done
	if c.count() != 3 {
		t.Errorf("max speed delivered %d of 3", c.count())
	}
	p = NewPlayer(context.Background(), &listSource{ts: []algebra.Time{0, 5 * sec, 100 * sec}}, Options{Speed: 1, Start: at(0), End: 6 * sec, Clock: clock, Drain: true, Beat: NoBeats})
	c = collect(p)
	c.settle(t, 1, "start")
	clock.Advance(5 * time.Second)
	<-c.done
	if c.count() != 3 {
		t.Errorf("delivered %d of 3: an element after End must not wait", c.count())
	}
	// Paused at max speed, nothing moves until a step.
	p = NewPlayer(context.Background(), &listSource{ts: []algebra.Time{1, 2, 3}}, Options{Speed: 0, Start: at(0), End: algebra.Forever, Clock: clock, Paused: true, Drain: true, Beat: NoBeats})
	c = collect(p)
	c.settle(t, 0, "paused at max speed")
	p.Step()
	c.settle(t, 1, "a step at max speed")
	p.Resume()
	<-c.done
	// A cancelled context ends a player.
	ctx, cancel := context.WithCancel(context.Background())
	p = NewPlayer(ctx, &listSource{ts: []algebra.Time{0, 100 * sec}}, Options{Speed: 1, Start: at(0), End: algebra.Forever, Clock: clock, Drain: true, Beat: NoBeats})
	c = collect(p)
	c.settle(t, 1, "before cancel")
	cancel()
	<-c.done
}

// TestPlayerHeartbeat: while waiting, a player lets time pass in
// heartbeats, and ends with one at End.
func TestPlayerHeartbeat(t *testing.T) {
	clock := newFakeClock()
	p := NewPlayer(context.Background(), &listSource{ts: []algebra.Time{0, 3 * sec}},
		Options{Speed: 1, Start: at(0), End: 5 * sec, Clock: clock, Beat: time.Second, Drain: true})
	type got struct {
		rel string
		t   algebra.Time
	}
	out := make(chan got, 100)
	go func() {
		defer close(out)
		for {
			rel, e, ok, err := p.Next()
			if err != nil || !ok {
				return
			}
			out <- got{rel, e.T}
		}
	}()
	want := []got{{"R", 0}, {Heartbeat, sec}, {Heartbeat, 2 * sec}, {"R", 3 * sec}, {Heartbeat, 4 * sec}, {Heartbeat, 5 * sec}}
	for i, w := range want {
		select {
		case g := <-out:
			if g != w {
				t.Fatalf("element %d: %+v, want %+v", i, g, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("element %d never came", i)
		}
		if i < len(want)-1 {
			time.Sleep(10 * time.Millisecond) // let the player wait again
			clock.Advance(time.Second)
		}
	}
	if _, more := <-out; more {
		t.Error("elements after the last heartbeat")
	}
}
