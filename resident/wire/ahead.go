package wire

import (
	"errors"
	"sync"
)

// ErrClosed is what Ahead.Recv returns once its receiver closed it.
var ErrClosed = errors.New("wire: connection closed")

// Ahead is the read-ahead queue of a client connection (gRPC or NATS):
// one reader goroutine decodes batches and Puts them; Recv takes them in
// order. It holds at most its capacity: a full queue makes Put wait, so
// a connection never holds more than that many decoded batches ahead of
// its receiver (the transport's flow control — gRPC's window, the NATS
// client's acknowledgements — pushes back on the resident). Finish
// records why the reader ended; the batches already queued are still
// received before that error. Close (the receiver's) makes every later
// Recv return ErrClosed and every Put return false at once, so a reader
// never blocks on a receiver that left.
type Ahead struct {
	q       chan *Batch
	done    chan struct{} // closed by Finish; err is set before
	err     error
	closing chan struct{} // closed by Close
	finish  sync.Once
	close   sync.Once
}

// NewAhead makes a queue holding at most n batches (n ≥ 1).
func NewAhead(n int) *Ahead {
	if n < 1 {
		n = 1
	}
	return &Ahead{q: make(chan *Batch, n), done: make(chan struct{}), closing: make(chan struct{})}
}

// Put queues b, waiting while the queue is full; false when the receiver
// closed the queue (b is then dropped: nobody will read it).
func (a *Ahead) Put(b *Batch) bool {
	select {
	case a.q <- b:
		return true
	case <-a.closing:
		return false
	}
}

// Finish ends the queue with err (io.EOF: the resident ended the session
// normally). Only the first call counts.
func (a *Ahead) Finish(err error) {
	a.finish.Do(func() {
		a.err = err
		close(a.done)
	})
}

// Done is closed once Finish has been called.
func (a *Ahead) Done() <-chan struct{} { return a.done }

// Err is the error Finish recorded (nil before Finish).
func (a *Ahead) Err() error {
	select {
	case <-a.done:
		return a.err
	default:
		return nil
	}
}

// Close is the receiver leaving: later Recvs return ErrClosed.
func (a *Ahead) Close() { a.close.Do(func() { close(a.closing) }) }

// Closing is closed once Close has been called.
func (a *Ahead) Closing() <-chan struct{} { return a.closing }

// Recv returns the next batch; after Finish, the queued batches and then
// the recorded error; after Close, ErrClosed.
func (a *Ahead) Recv() (*Batch, error) {
	select {
	case <-a.closing:
		return nil, ErrClosed
	default:
	}
	select {
	case b := <-a.q:
		return b, nil
	case <-a.closing:
		return nil, ErrClosed
	case <-a.done:
		select {
		case b := <-a.q:
			return b, nil
		default:
			return nil, a.err
		}
	}
}
