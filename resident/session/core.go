package session

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqmon/tqmon/resident/wire"
)

// DefaultLease is a session's lease until its first CLease.
const DefaultLease = 10 * time.Second

// Core is what every resident session is, whatever the subject: its
// lease, its command count and state, and its mailbox. A resident's
// session type holds one (Init makes it ready) beside what it enabled.
type Core struct {
	clock func() int64 // real monotonic ns
	// Stamp is the packets' clock, read when a command has been carried
	// out (Batch.AppliedAt); nil: clock.
	Stamp    func() int64
	expiry   atomic.Int64 // lease end (clock)
	expiring atomic.Bool  // Expired said so once

	// Command state (the resident's lock).
	seq    uint64 // commands received
	closed bool   // no command is carried out any more

	mailbox
}

// Init makes c ready for a resident with the given number of sensors
// (relations) whose real monotonic clock is clock, and whose sessions
// hold packets within budget (nil: only MaxHeld bounds the session). The
// lease starts now, for DefaultLease.
func (c *Core) Init(sensors int, clock func() int64, budget *Budget) {
	c.clock = clock
	c.budget = budget
	budget.join()
	c.expiry.Store(clock() + int64(DefaultLease))
	c.lastW = math.MinInt64
	c.over = make([]uint64, sensors)
	c.own = make([]uint64, sensors)
	c.ready = make(chan struct{}, 1)
	c.done = make(chan struct{})
}

// Refuse ends a session at its birth (the resident closed, too many
// sessions, tracking failed): commands and Recv return err.
func (c *Core) Refuse(err error) {
	c.closed = true
	c.End(err, false)
}

// Shut closes the session to commands (the resident's lock held, as the
// resident starts undoing what the session enabled); it reports whether
// the session was open, so that only one caller undoes it.
func (c *Core) Shut() bool {
	if c.closed {
		return false
	}
	c.closed = true
	return true
}

// Closed reports whether the session is closed to commands (the
// resident's lock held).
func (c *Core) Closed() bool { return c.closed }

// Expired reports, once, that the lease ran out by now (real monotonic
// ns): the resident then ends the session with ErrLeaseExpired (not while
// it holds the lock that ending takes).
func (c *Core) Expired(now int64) bool {
	return now > c.expiry.Load() && c.expiring.CompareAndSwap(false, true)
}

// Command carries out one command for the session under mu, the
// resident's lock. It numbers the command; once the session is closed it
// refuses it with the session's error; a CBye calls bye (without mu: bye
// takes it to end the session); a CLease renews the lease; every other
// kind goes to apply, whose *CommandError (made with Fail) must mean that
// nothing changed.
func (c *Core) Command(mu sync.Locker, cmd *wire.Command, apply func(*wire.Command) error, bye func()) error {
	if cmd == nil {
		return errors.New("resident: nil command")
	}
	mu.Lock()
	c.seq++
	if c.closed {
		mu.Unlock()
		err := c.Err()
		if err == nil {
			err = ErrClosed
		}
		return fmt.Errorf("resident: command %d (%s): %w", c.seq, cmd.Kind, err)
	}
	switch cmd.Kind {
	case wire.CBye:
		mu.Unlock()
		bye()
		return nil
	case wire.CLease:
		defer mu.Unlock()
		defer c.leaseApplied()
		if cmd.Period <= 0 {
			return c.Fail(cmd, "period", "lease period %d ns is not positive", cmd.Period)
		}
		if cmd.Period > int64(MaxLease) {
			return c.Fail(cmd, "period", "lease period %v is longer than the longest, %v", time.Duration(cmd.Period), MaxLease)
		}
		c.expiry.Store(c.clock() + cmd.Period)
		return nil
	}
	defer mu.Unlock()
	defer c.applied()
	return apply(cmd)
}

// applied notes that the session's commands so far have been carried out
// (the resident's lock held), and when, on the packets' clock: the
// batches made from now on say so (Batch.Applied, AppliedAt).
func (c *Core) applied() {
	stamp := c.Stamp
	if stamp == nil {
		stamp = c.clock
	}
	c.qmu.Lock()
	c.nApplied, c.appliedAt = c.seq, stamp()
	c.qmu.Unlock()
}

// leaseApplied is applied for a lease renewal, which changes nothing a
// remote observes: the commands before it have been in force since they
// were applied, so the time batches say they were (AppliedAt) stays —
// else a renewal racing a remote's first batch would move the start of
// its observation past packets already sent (the resident's lock held).
func (c *Core) leaseApplied() {
	c.qmu.Lock()
	first := c.nApplied == 0
	if !first {
		c.nApplied = c.seq
	}
	c.qmu.Unlock()
	if first {
		c.applied()
	}
}

// Fail returns the *CommandError refusing the command being carried out
// (the resident's lock held): the field at fault and why.
func (c *Core) Fail(cmd *wire.Command, field, format string, args ...any) error {
	return &CommandError{Seq: c.seq, Kind: cmd.Kind, Field: field, Msg: fmt.Sprintf(format, args...)}
}
