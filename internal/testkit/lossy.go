package testkit

import (
	"sync"
	"time"

	"github.com/tqmon/tqmon/resident/wire"
)

// Lossy is a resident connection that loses one sensor's packets between
// two instants of real time after its first batch, as a resident whose
// buffer overflowed would: the packets are taken out of the batches and
// added to the sensor's drop count (so delivered + lost = produced).
// On a loaded machine no batch with one of the sensor's packets may come
// inside the window; the loss then goes on past it until it has taken
// one (Ended says when it ended), so every run shows a loss.
type Lossy struct {
	wire.Conn
	Sensor   uint16
	From, To time.Duration

	mu      sync.Mutex
	first   time.Time
	ended   time.Time // set when the loss went on past To
	removed uint64
	wanted  uint64 // the sensor's last counts from the resident
	drops   uint64
}

// NewLossy loses the packets of the named sensor from from to to after the
// first batch.
func NewLossy(c wire.Conn, sensor string, from, to time.Duration) *Lossy {
	id := 0
	for i, s := range c.Hello().Sensors {
		if s == sensor {
			id = i
		}
	}
	return &Lossy{Conn: c, Sensor: uint16(id), From: from, To: to}
}

func (c *Lossy) Recv() (*wire.Batch, error) {
	b, err := c.Conn.Recv()
	if err != nil {
		return b, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first.IsZero() {
		c.first = time.Now()
	}
	if d := time.Since(c.first); d >= c.From && (d < c.To || c.removed == 0) {
		if d >= c.To {
			c.ended = time.Now()
		}
		kept := b.Packets[:0:0]
		for _, p := range b.Packets {
			if p.Sensor == c.Sensor {
				c.removed++
				continue
			}
			kept = append(kept, p)
		}
		b.Packets = kept
	}
	seen := false
	for i := range b.Counts {
		if b.Counts[i].Sensor == c.Sensor {
			c.wanted, c.drops = b.Counts[i].Wanted, b.Counts[i].Drops
			b.Counts[i].Drops += c.removed
			seen = true
		}
	}
	if !seen && c.removed > 0 {
		b.Counts = append(b.Counts, wire.Count{Sensor: c.Sensor, Wanted: c.wanted, Drops: c.drops + c.removed})
	}
	return b, nil
}

// Removed counts the packets taken out so far.
func (c *Lossy) Removed() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.removed
}

// Ended is when the losing ended (zero before the first batch).
func (c *Lossy) Ended() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first.IsZero() || !c.ended.IsZero() {
		return c.ended
	}
	return c.first.Add(c.To)
}
