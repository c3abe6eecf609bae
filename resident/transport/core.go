package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/tqmon/tqmon/resident/wire"
)

// This file is what every transport (gRPC here, NATS in resident/fleet)
// does the same way with a session: the resident side's Hello frame,
// command application and batch pump (Served), and the monitor side's
// command sender (Sender). A transport adds only how frames travel.

// HelloFrame encodes the resident's handshake, refusing one larger than
// maxFrame.
func HelloFrame(s Sessions, maxFrame int) ([]byte, error) {
	hello, err := s.Hello().MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("transport: encoding hello: %w", err)
	}
	if len(hello) > maxFrame {
		return nil, fmt.Errorf("transport: hello of %d bytes exceeds MaxFrame %d: %w", len(hello), maxFrame, wire.ErrFrameTooLarge)
	}
	return hello, nil
}

// Counters count what a transport sent for its sessions.
type Counters struct {
	Batches, Frames, Packets atomic.Int64
}

// Served is one session as a transport serves it: commands applied one
// at a time and never after Close; Close once, whoever calls it first
// (the stream ending, an eviction, a lost monitor).
type Served struct {
	sess    Session
	mu      sync.Mutex // Apply and Close never overlap
	closed  bool
	once    sync.Once
	onClose func()
}

// NewServed serves sess; onClose (may be nil) runs once, after the
// session closed.
func NewServed(sess Session, onClose func()) *Served {
	return &Served{sess: sess, onClose: onClose}
}

// Command applies c unless the session is closed (ok false). bye, when c
// is a CBye, runs under the lock before the session applies it, so that
// a transport can mark the session's end as the monitor's doing before
// the session itself ends.
func (s *Served) Command(c *wire.Command, bye func()) (ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, nil
	}
	if c.Kind == wire.CBye && bye != nil {
		bye()
	}
	return true, s.sess.Apply(c)
}

// Close closes the session once (the resident clears what it set).
func (s *Served) Close() {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.sess.Close()
		if s.onClose != nil {
			s.onClose()
		}
	})
}

// SessionError is a session that ended other than normally (Encoding:
// a batch that did not encode, else the session's own error).
type SessionError struct {
	Encoding bool
	Err      error
}

func (e *SessionError) Error() string {
	if e.Encoding {
		return "encoding batch: " + e.Err.Error()
	}
	return "session ended: " + e.Err.Error()
}

func (e *SessionError) Unwrap() error { return e.Err }

// Pump sends the session's batches, each split into frames of at most
// maxFrame bytes (wire.Batch.EncodeSplit), through send until the
// session ends or ctx does. A batch's memory goes back to the session
// (wire.Releaser) once it is encoded. It returns nil when the resident
// ended the session normally (io.EOF); ctx.Err() when ctx ended first
// (the caller reads its cause); a *SessionError when the session ended
// otherwise or a batch did not encode; send's error as it is.
func (s *Served) Pump(ctx context.Context, maxFrame int, send func([]byte) error, n *Counters) error {
	for {
		b, err := s.sess.Recv(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return &SessionError{Err: err}
		}
		if b == nil {
			continue
		}
		npk := len(b.Packets) // b is not ours once released
		frames, err := b.EncodeSplit(maxFrame)
		if rel, ok := s.sess.(wire.Releaser); ok {
			rel.Release(b) // encoded: its memory can serve the next batch
		}
		if err != nil {
			return &SessionError{Encoding: true, Err: err}
		}
		for _, fr := range frames {
			if err := send(fr); err != nil {
				return err
			}
		}
		n.Batches.Add(1)
		n.Frames.Add(int64(len(frames)))
		n.Packets.Add(int64(npk))
	}
}

// Sender is a monitor's side of the commands: encoded, sent one at a
// time, none after Bye.
type Sender struct {
	mu     sync.Mutex
	closed bool
	send   func([]byte) error
}

// NewSender sends encoded commands through send.
func NewSender(send func([]byte) error) *Sender { return &Sender{send: send} }

// Send encodes and sends c; wire.ErrClosed after Bye.
func (s *Sender) Send(c *wire.Command) error {
	enc, err := c.MarshalBinary()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return wire.ErrClosed
	}
	return s.send(enc)
}

// Bye sends CBye once (best effort), then runs after (may be nil) under
// the same lock: no command is sent after it.
func (s *Sender) Bye(after func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if enc, err := (&wire.Command{Kind: wire.CBye}).MarshalBinary(); err == nil {
		_ = s.send(enc)
	}
	if after != nil {
		after()
	}
}

// ParseHello decodes a resident's handshake frame; a resident speaking
// another protocol version is refused, naming both versions. where names
// the resident in errors.
func ParseHello(where string, b []byte) (*wire.Hello, error) {
	hello := new(wire.Hello)
	if err := hello.UnmarshalBinary(b); err != nil {
		var ve *wire.VersionError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("%s: the resident speaks protocol version %d; this monitor speaks version %d: %w",
				where, ve.Got, wire.Version, err)
		}
		return nil, fmt.Errorf("%s: handshake: %w", where, err)
	}
	return hello, nil
}
