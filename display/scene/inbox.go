package scene

import (
	"sync"

	"github.com/tqmon/tqmon/algebra/stream"
)

// Inbox hands deltas from the goroutines that produce them (the update
// network's) to the one that owns the scene: Put queues, Drain applies.
// Past Limit queued deltas, Put waits for a Drain, so a display that
// cannot keep up slows the network down rather than growing without
// bound.
type Inbox struct {
	mu     sync.Mutex
	space  *sync.Cond
	queue  []delivery
	spare  []delivery
	closed bool
	// Limit is the most deltas queued before Put waits (default 1<<16).
	Limit int
}

type delivery struct {
	r *Relation
	e stream.Elem
}

// NewInbox makes an empty inbox.
func NewInbox() *Inbox {
	b := &Inbox{Limit: 1 << 16}
	b.space = sync.NewCond(&b.mu)
	return b
}

// Put queues a delta of relation r. After Close it drops it.
func (b *Inbox) Put(r *Relation, e stream.Elem) {
	b.mu.Lock()
	for len(b.queue) >= b.Limit && !b.closed {
		b.space.Wait()
	}
	if !b.closed {
		b.queue = append(b.queue, delivery{r, e})
	}
	b.mu.Unlock()
}

// Drain applies every queued delta, in the order queued, and returns how
// many. Call it from the goroutine that owns the scene.
func (b *Inbox) Drain() int {
	b.mu.Lock()
	q := b.queue
	b.queue = b.spare[:0]
	b.space.Broadcast()
	b.mu.Unlock()
	for _, d := range q {
		d.r.Push(d.e)
	}
	n := len(q)
	clear(q)
	b.mu.Lock()
	b.spare = q[:0]
	b.mu.Unlock()
	return n
}

// Close releases producers waiting in Put; later deltas are dropped.
func (b *Inbox) Close() {
	b.mu.Lock()
	b.closed = true
	b.space.Broadcast()
	b.mu.Unlock()
}
