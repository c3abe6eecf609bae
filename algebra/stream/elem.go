package stream

import "github.com/tqmon/tqmon/algebra"

// Kind is the kind of a stream element.
type Kind uint8

const (
	End   Kind = iota // a tuple's valid time ends at T
	Begin             // a tuple's valid time begins at T
	Event             // an event tuple at T

	// The two late kinds come only from α operators, whose sensors may
	// report a tuple after its valid time began; only a Join consumes them.

	// Whole is a complete interval tuple [Rec.From, T) learnt at its end T
	// (a traced-then-disabled sensor fires once, when the tuple is complete).
	Whole
	// Late is a Begin learnt at T > Rec.From (a sample found the tuple
	// already valid); its End follows as usual.
	Late
)

func (k Kind) String() string {
	switch k {
	case End:
		return "End"
	case Begin:
		return "Begin"
	case Whole:
		return "Whole"
	case Late:
		return "Late"
	}
	return "Event"
}

// Rec is a tuple in flight: its values and the start of its valid time. The
// pointer is its identity: an End carries the Rec its Begin carried. Values
// are shared by every consumer and must not be modified.
type Rec struct {
	Vals []algebra.Value
	From algebra.Time
}

// Elem is one element of a delta stream.
type Elem struct {
	Kind Kind
	T    algebra.Time
	Rec  *Rec
}

// Phase orders elements at equal times: Ends (and whole tuples, which end
// at T) are phase 0, everything else phase 1.
func (e Elem) Phase() uint8 {
	if e.Kind == End || e.Kind == Whole {
		return 0
	}
	return 1
}

// Less orders elements by time, then phase.
func Less(a, b Elem) bool {
	if a.T != b.T {
		return a.T < b.T
	}
	return a.Phase() < b.Phase()
}

// Compare is Less as a three-way comparison, for slices.SortFunc.
func Compare(a, b Elem) int {
	switch {
	case a.T < b.T:
		return -1
	case a.T > b.T:
		return 1
	}
	return int(a.Phase()) - int(b.Phase())
}

// Receiver consumes a delta stream.
type Receiver interface {
	// Push delivers one element.
	Push(e Elem)
	// Advance promises that no element with time ≤ t will follow.
	// Advance(Forever) ends the stream: a tuple whose End has not come by
	// then is valid until Forever (an End at Forever is never sent).
	Advance(t algebra.Time)
}

// Tee sends a stream to several receivers.
type Tee struct {
	Outs []Receiver
}

// Add connects another receiver.
func (t *Tee) Add(r Receiver) { t.Outs = append(t.Outs, r) }

func (t *Tee) Push(e Elem) {
	for _, o := range t.Outs {
		o.Push(e)
	}
}

func (t *Tee) Advance(w algebra.Time) {
	for _, o := range t.Outs {
		o.Advance(w)
	}
}

// Source yields the tuples of primitive relations as stream elements in
// time order (at equal times, Ends before Begins and Events): a store's
// scan, a replay, a history's tables.
type Source interface {
	// Next returns the next element and the relation it belongs to; ok is
	// false at the end. An element's Rec must be the same pointer at its
	// Begin and its End.
	Next() (rel string, e Elem, ok bool, err error)
}

// PacketKind is the kind of a live sensor packet.
type PacketKind uint8

const (
	PacketEvent     PacketKind = iota + 1 // an event at T
	PacketBegin                           // interval Key begins at T
	PacketEnd                             // interval Key ends at T (From: its begin)
	PacketWhole                           // a complete interval [From, T)
	PacketSample                          // interval Key, valid since From, sampled at T
	PacketSampleEnd                       // sampled interval Key ends at T
)
