package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Coalesce turns a multiset stream into a set, as docs/tquel.md requires of
// results: value-equivalent intervals that overlap or meet become one
// interval covering their union, and value-equivalent events at one chronon
// become one event.
//
// It counts, per value, the input intervals currently valid; the output
// interval begins when the count leaves zero and ends when it returns to
// zero — but only once the time of that End is complete, since a Begin at the
// same time continues the interval (meeting intervals merge). Outputs at the
// current time are therefore held until time moves on, then sent Ends first.
type Coalesce struct {
	out    stream.Receiver
	groups map[string]*group
	keybuf []byte

	cur      algebra.Time
	curSet   bool
	ending   []*group      // count fell to zero at cur
	begins   []stream.Elem // Begins and Events at cur
	evSeen   map[string]bool
	lastAdv  algebra.Time
	advanced bool
}

type group struct {
	key     string
	count   int
	out     *stream.Rec
	pending bool // count is zero at cur; End not yet sent
}

// NewCoalesce builds the operator.
func NewCoalesce(out stream.Receiver) *Coalesce {
	return &Coalesce{out: out, groups: map[string]*group{}, evSeen: map[string]bool{}}
}

func (c *Coalesce) Push(e stream.Elem) {
	if !c.curSet || e.T != c.cur {
		c.flush()
		c.cur, c.curSet = e.T, true
	}
	c.keybuf = algebra.AppendTupleKey(c.keybuf[:0], e.Rec.Vals)
	switch e.Kind {
	case stream.Event:
		if c.evSeen[string(c.keybuf)] {
			return
		}
		c.evSeen[string(c.keybuf)] = true
		c.begins = append(c.begins, stream.Elem{Kind: stream.Event, T: e.T, Rec: &stream.Rec{Vals: e.Rec.Vals, From: e.T}})
	case stream.Begin:
		g := c.groups[string(c.keybuf)]
		if g == nil {
			g = &group{key: string(c.keybuf)}
			c.groups[g.key] = g
		}
		g.count++
		if g.pending {
			g.pending = false // meets the interval that ended here: continue it
			return
		}
		if g.count == 1 {
			g.out = &stream.Rec{Vals: e.Rec.Vals, From: e.T}
			c.begins = append(c.begins, stream.Elem{Kind: stream.Begin, T: e.T, Rec: g.out})
		}
	case stream.End:
		g := c.groups[string(c.keybuf)]
		if g == nil {
			return
		}
		g.count--
		if g.count == 0 {
			g.pending = true
			c.ending = append(c.ending, g)
		}
	}
}

// flush sends what happened at the current time: Ends first.
func (c *Coalesce) flush() {
	for _, g := range c.ending {
		if g.pending {
			g.pending = false
			c.out.Push(stream.Elem{Kind: stream.End, T: c.cur, Rec: g.out})
			g.out = nil
			delete(c.groups, g.key)
		}
	}
	c.ending = c.ending[:0]
	for i, e := range c.begins {
		c.out.Push(e)
		c.begins[i] = stream.Elem{}
	}
	c.begins = c.begins[:0]
	if len(c.evSeen) > 0 {
		clear(c.evSeen)
	}
}

func (c *Coalesce) Advance(t algebra.Time) {
	if c.curSet && t >= c.cur {
		c.flush()
		c.curSet = false
	}
	if !c.advanced || t > c.lastAdv {
		c.lastAdv, c.advanced = t, true
		c.out.Advance(t)
	}
}

// Held counts open output intervals and outputs waiting for their time to
// complete.
func (c *Coalesce) Held() int { return len(c.groups) + len(c.begins) }
