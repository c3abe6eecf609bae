package exec

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

// phase orders elements at equal times: Ends (and whole tuples, which end
// at T) first.
func (e Elem) phase() uint8 {
	if e.Kind == End || e.Kind == Whole {
		return 0
	}
	return 1
}

// elemLess orders elements by time, then phase.
func elemLess(a, b Elem) bool {
	if a.T != b.T {
		return a.T < b.T
	}
	return a.phase() < b.phase()
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

// runState is shared by the operators of a network: the first runtime error
// stops the run.
type runState struct {
	err error
}

func (s *runState) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// holder is implemented by operators that keep tuples, for statistics.
type holder interface {
	// Held is the number of tuples (stored inputs, pending decisions and
	// buffered outputs) the operator holds now.
	Held() int
}
