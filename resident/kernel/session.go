package kernel

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
)

// Errors a session ends with.
var (
	ErrClosed          = errors.New("kernel resident: session closed")
	ErrLeaseExpired    = errors.New("kernel resident: session lease expired")
	ErrTooManySessions = fmt.Errorf("kernel resident: more than %d sessions", maxSessions)
)

// defaultLease is a session's lease until its first CLease.
const defaultLease = 10 * time.Second

// emptyEvery is how often a session gets a batch without packets (its
// watermark advancing).
const emptyEvery = 5 * time.Millisecond

// flagKey is a sensor's enable for one entity (by number: pid, tid, cpu).
type flagKey struct {
	sensor int
	id     uint32
}

// Session is one remote monitor's session: what it enabled (its end
// undoes exactly that) and the batches flowing to it.
type Session struct {
	r        *Resident
	idx      int
	bit      uint64
	expiry   atomic.Int64 // monotonic ns
	expiring atomic.Bool

	// Enables (r.mu).
	own    map[flagKey]int
	all    map[int]int
	seq    uint64
	closed bool
	// defined: the entity keys whose definitions the session was sent
	// (drain, r.mu).
	defined map[uint64]bool

	qmu      sync.Mutex
	box      *wire.Batch
	lastW    int64
	lastEmit time.Time
	ended    bool
	err      error
	ready    chan struct{}
	done     chan struct{}
}

// CommandError is a command the resident refused.
type CommandError struct {
	Seq   uint64
	Kind  wire.CommandKind
	Field string
	Msg   string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("kernel resident: command %d (%s): %s: %s", e.Seq, e.Kind, e.Field, e.Msg)
}

// Open starts a session. Its first batch carries the live processes,
// threads and processors. The first session starts the tracking of
// processes and threads (their programs attach); the last one to end
// stops it (everything detaches). After Close, with too many sessions,
// or when tracking cannot start, the session is born ended (Recv and
// Apply return the error).
func (r *Resident) Open() *Session {
	s := &Session{r: r, own: map[flagKey]int{}, all: map[int]int{}, defined: map[uint64]bool{},
		ready: make(chan struct{}, 1), done: make(chan struct{}), lastW: -1 << 63}
	s.expiry.Store(monoNow() + int64(defaultLease))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		s.end(ErrClosed, false)
		return s
	}
	s.idx = -1
	for i, x := range r.sessions {
		if x == nil {
			s.idx = i
			break
		}
	}
	if s.idx < 0 {
		s.end(ErrTooManySessions, false)
		return s
	}
	s.bit = 1 << s.idx
	if r.tr == nil {
		tr, err := r.startTracking()
		if err != nil {
			s.end(err, false)
			return s
		}
		r.tr = tr
	}
	s.box = &wire.Batch{Watermark: r.tr.lastW}
	s.box.Packets, s.box.Defs = r.tr.ents.snapshot(s)
	r.sessions[s.idx] = s
	s.signal()
	return s
}

// Close ends the session: every enable it made is undone; Recv returns
// ErrClosed.
func (s *Session) Close() { s.closeWith(ErrClosed) }

func (s *Session) closeWith(err error) {
	r := s.r
	r.mu.Lock()
	if s.closed {
		r.mu.Unlock()
		return
	}
	r.dropSessionLocked(s, err, false)
	var tr *tracker
	if r.tr != nil && r.idleLocked() {
		tr, r.tr = r.tr, nil
	}
	r.mu.Unlock()
	if tr != nil {
		tr.stopDrain(false)
		tr.teardown()
	}
}

func (r *Resident) idleLocked() bool {
	for _, s := range r.sessions {
		if s != nil {
			return false
		}
	}
	return true
}

// dropSessionLocked undoes a session's enables and ends it (r.mu held).
func (r *Resident) dropSessionLocked(s *Session, err error, keep bool) {
	if s.closed {
		return
	}
	s.closed = true
	for k, n := range s.own {
		r.setFlag(r.sensors[k.sensor], k.id, -n)
	}
	for sid, n := range s.all {
		r.setAll(r.sensors[sid], -n)
	}
	clear(s.own)
	clear(s.all)
	if s.idx >= 0 && r.sessions[s.idx] == s {
		r.sessions[s.idx] = nil
	}
	s.end(err, keep)
}

// end marks the session ended; keep keeps the undelivered batch for
// Recv (Resident.Close's last batch).
func (s *Session) end(err error, keep bool) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if s.ended {
		return
	}
	s.ended, s.err = true, err
	if !keep {
		s.box = nil
	}
	close(s.done)
}

func (s *Session) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// Recv returns the session's next batch: packets in time order after the
// previous batch's watermark, the definitions of the entity keys it uses
// that the session was not sent, the new watermark and the cumulative
// per-sensor counts. It returns the session's error once it ended, or
// ctx's.
func (s *Session) Recv(ctx context.Context) (*wire.Batch, error) {
	for {
		s.qmu.Lock()
		if b := s.box; b != nil && (len(b.Packets) > 0 || len(b.Defs) > 0 || s.ended || time.Since(s.lastEmit) >= emptyEvery) {
			s.box = nil
			s.lastEmit = time.Now()
			s.qmu.Unlock()
			return b, nil
		}
		if s.ended {
			err := s.err
			s.qmu.Unlock()
			return nil, err
		}
		s.qmu.Unlock()
		select {
		case <-s.ready:
		case <-s.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// deliver adds a round's packets and definitions to the session's batch,
// with watermark w and the counts.
func (s *Session) deliver(pk []wire.Packet, defs []wire.EntityDef, w int64, counts []wire.Count) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if s.ended {
		return
	}
	b := s.box
	if b == nil {
		b = &wire.Batch{}
		s.box = b
	}
	b.Packets = append(b.Packets, pk...)
	b.Defs = append(b.Defs, defs...)
	if w > s.lastW {
		s.lastW = w
	}
	b.Watermark = s.lastW
	b.Counts = counts
	if len(b.Packets) > 0 || len(b.Defs) > 0 || time.Since(s.lastEmit) >= emptyEvery {
		s.signal()
	}
}

// Apply carries out a command. A command the resident cannot carry out
// changes nothing and gets a *CommandError.
func (s *Session) Apply(cmd *wire.Command) error {
	if cmd == nil {
		return errors.New("kernel resident: nil command")
	}
	r := s.r
	r.mu.Lock()
	s.seq++
	if s.closed {
		r.mu.Unlock()
		s.qmu.Lock()
		err := s.err
		s.qmu.Unlock()
		if err == nil {
			err = ErrClosed
		}
		return fmt.Errorf("kernel resident: command %d (%s): %w", s.seq, cmd.Kind, err)
	}
	if cmd.Kind == wire.CBye {
		r.mu.Unlock()
		s.closeWith(ErrClosed)
		return nil
	}
	err := s.apply(cmd)
	r.mu.Unlock()
	return err
}

func (s *Session) fail(cmd *wire.Command, field, format string, args ...any) error {
	return &CommandError{Seq: s.seq, Kind: cmd.Kind, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// sensorArg resolves a command's sensor: one with kernel programs.
func (s *Session) sensorArg(cmd *wire.Command) (*sensorState, error) {
	r := s.r
	if int(cmd.Sensor) >= len(r.sensors) {
		return nil, s.fail(cmd, "sensor", "unknown sensor %d (the resident has %d)", cmd.Sensor, len(r.sensors))
	}
	ss := r.sensors[cmd.Sensor]
	if ss == nil {
		return nil, s.fail(cmd, "sensor", "%s has no kernel sensor (an entity relation, or a relation without binding)", r.cat.Relations[cmd.Sensor].Name)
	}
	return ss, nil
}

func (s *Session) apply(cmd *wire.Command) error {
	r := s.r
	switch cmd.Kind {
	case wire.CEnable, wire.CDisable:
		ss, err := s.sensorArg(cmd)
		if err != nil {
			return err
		}
		if int(cmd.Type) >= len(r.cat.EntityTypes) || r.cat.EntityTypes[cmd.Type] != ss.s.FlagType {
			return s.fail(cmd, "type", "%s's flag holder is a %s", ss.s.Rel.Name, ss.s.FlagType)
		}
		n, err := strconv.ParseUint(cmd.Entity, 10, 32)
		if err != nil {
			return s.fail(cmd, "entity", "%s IDs are numbers, not %q", ss.s.FlagType, cmd.Entity)
		}
		k := flagKey{ss.s.ID, uint32(n)}
		if cmd.Kind == wire.CEnable {
			if err := r.setFlag(ss, k.id, 1); err != nil {
				return s.fail(cmd, "sensor", "%v", err)
			}
			s.own[k]++
			return nil
		}
		if s.own[k] == 0 {
			return s.fail(cmd, "entity", "%s is not enabled for %s %s by this session", ss.s.Rel.Name, ss.s.FlagType, cmd.Entity)
		}
		s.own[k]--
		if s.own[k] == 0 {
			delete(s.own, k)
		}
		return r.setFlag(ss, k.id, -1)
	case wire.CEnableAll, wire.CDisableAll:
		ss, err := s.sensorArg(cmd)
		if err != nil {
			return err
		}
		id := ss.s.ID
		if cmd.Kind == wire.CEnableAll {
			if err := r.setAll(ss, 1); err != nil {
				return s.fail(cmd, "sensor", "%v", err)
			}
			s.all[id]++
			return nil
		}
		if s.all[id] == 0 {
			return s.fail(cmd, "sensor", "%s is not enabled for every entity by this session", ss.s.Rel.Name)
		}
		s.all[id]--
		if s.all[id] == 0 {
			delete(s.all, id)
		}
		return r.setAll(ss, -1)
	case wire.CTrigger, wire.CUntrigger:
		return s.fail(cmd, "kind", "the kernel resident does not evaluate triggers (it does not advertise %q)", wire.CapTriggers)
	case wire.CSample, wire.CUnsample:
		return s.fail(cmd, "kind", "the kernel resident has no sampled sensors")
	case wire.CLease:
		if cmd.Period <= 0 {
			return s.fail(cmd, "period", "lease period %d ns is not positive", cmd.Period)
		}
		s.expiry.Store(monoNow() + cmd.Period)
	default:
		return s.fail(cmd, "kind", "unknown command kind %d", cmd.Kind)
	}
	return nil
}

// holds reports whether the session enables sensor for entity id
// (r.mu).
func (s *Session) holds(sensor int, id uint32) bool {
	return s.all[sensor] > 0 || s.own[flagKey{sensor, id}] > 0
}

// Local returns an in-process connection: a new session; Recv receives
// its batches, Send applies commands, Close ends it.
func (r *Resident) Local() wire.Conn { return &localConn{r: r, s: r.Open()} }

type localConn struct {
	r *Resident
	s *Session
}

func (c *localConn) Hello() *wire.Hello           { return c.r.Hello() }
func (c *localConn) Recv() (*wire.Batch, error)   { return c.s.Recv(context.Background()) }
func (c *localConn) Send(cmd *wire.Command) error { return c.s.Apply(cmd) }
func (c *localConn) Close() error                 { c.s.Close(); return nil }

// Sessions returns the resident as a transport server sees it (for
// `tqmon resident --kernel --listen`).
func (r *Resident) Sessions() transport.Sessions { return transport.Adapt(r.Hello, r.Open) }
