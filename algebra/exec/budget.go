package exec

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tqmon/tqmon/algebra/check"
)

// ErrMemory marks a run stopped by its memory budget (errors.Is); the
// error itself is a *MemoryError.
var ErrMemory = errors.New("memory budget exceeded")

// Budget is a run's memory budget. The network checks it at every
// advance of time, every element a driver pushes and, at a coarse stride,
// inside the loops that can create state without bound (a join's
// enumeration of bindings): the run stops — through the error every
// runtime error takes, with a *MemoryError — once either the operators'
// accounting (tuples held × an estimate of their bytes) or the heap size
// a watchdog outside the network reports (Over) is past Limit.
//
// The network reads the clock nowhere; measuring the heap is the
// watchdog's (package query).
type Budget struct {
	// Limit is the budget in bytes; 0 or less: none.
	Limit int64
	heap  atomic.Int64 // the heap size seen over Limit (0: not yet)
}

// Over tells the run that its heap was seen at heap bytes, over Limit:
// the run stops at its next check. It is safe from any goroutine; the
// first report is kept.
func (b *Budget) Over(heap int64) { b.heap.CompareAndSwap(0, heap) }

// pollStride is how many steps of work (bindings formed, elements pushed)
// pass between two budget checks inside long loops: coarse enough to cost
// nothing, fine enough that one outer tuple cannot create millions of
// candidates unchecked.
const pollStride = 1 << 10

// Estimated bytes per item held, from the sizes of the structures that
// hold them (lower rather than higher: the accounting stops a run only
// when what is certainly held is over the budget).
const (
	bytesTuple   = 96  // a stored or buffered tuple: entry, index slot, element
	bytesBinding = 160 // a pending binding (candidate) and its heap slots
	bytesVar     = 32  // per variable of a pending binding over more than three
)

// Holding is what one operator holds: how many items of what, and an
// estimate of their bytes.
type Holding struct {
	// Op names the operator ("join of S, W", "coalesce", "α W").
	Op string
	// Stmt is the retrieve the operator belongs to.
	Stmt *check.Retrieve
	// Parts are its items by kind, largest first.
	Parts []Part
	// Bytes estimates what the parts take.
	Bytes int64
}

// Part is a kind of item an operator holds.
type Part struct {
	N    int
	What string // "pending bindings", "stored tuples", "buffered results", "tuples"
}

// MemoryError is the error of a run stopped by its budget.
type MemoryError struct {
	Limit int64
	// Heap is the heap size the watchdog saw (0 when the accounting alone
	// stopped the run).
	Heap int64
	// Held are the operators that hold the most, most first: at most
	// three, each holding at least an eighth of what the first does.
	Held []Holding
}

func (e *MemoryError) Unwrap() error { return ErrMemory }

func (e *MemoryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "query stopped: memory budget %s exceeded", FormatBytes(e.Limit))
	var est int64
	for _, h := range e.Held {
		est += h.Bytes
	}
	if e.Heap > 0 {
		fmt.Fprintf(&b, " (heap %s)", FormatBytes(e.Heap))
	} else {
		fmt.Fprintf(&b, " (operators hold ≈ %s)", FormatBytes(est))
	}
	for i, h := range e.Held {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(h.Op)
		if r := h.Stmt; r != nil {
			name := r.Name
			if name == "" {
				name = "retrieve"
			}
			fmt.Fprintf(&b, " in %s", name)
			if r.Pos.IsValid() {
				fmt.Fprintf(&b, " (%s:%s)", r.File, r.Pos)
			}
		}
		b.WriteString(" holds ")
		for j, p := range h.Parts {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %s", formatCount(p.N), p.What)
		}
		fmt.Fprintf(&b, " (≈ %s)", FormatBytes(h.Bytes))
	}
	return b.String()
}

// FormatBytes writes a size in binary units: "512 B", "64.0 MiB".
func FormatBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f, u := float64(n)/1024, 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	return fmt.Sprintf("%.1f %ciB", f, units[u])
}

// formatCount writes a count the way the message reads best: 4.2M, 39k.
func formatCount(n int) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// holding is an operator of the network that keeps tuples, with what
// names it in a message.
type holding struct {
	h    holder
	op   string
	stmt *check.Retrieve
}

// parted is implemented by operators whose held items differ in kind
// (a join's stored tuples, pending bindings and buffered results).
type parted interface {
	// heldBytes estimates the bytes held, without allocating.
	heldBytes() int64
	parts() []Part
}

// bytes estimates what the operator holds now.
func (h holding) bytes() int64 {
	if p, ok := h.h.(parted); ok {
		return p.heldBytes()
	}
	return int64(h.h.Held()) * bytesTuple
}

// usage is what the operator holds now.
func (h holding) usage() Holding {
	u := Holding{Op: h.op, Stmt: h.stmt, Bytes: h.bytes()}
	if p, ok := h.h.(parted); ok {
		u.Parts = p.parts()
	} else if n := h.h.Held(); n > 0 {
		u.Parts = []Part{{N: n, What: "tuples"}}
	}
	return u
}

// checkBudget stops the run (runState.fail) when the budget is exceeded:
// the watchdog saw the heap over it, or the operators' accounting is.
func (n *Network) checkBudget() {
	b := n.opts.Budget
	if b == nil || b.Limit <= 0 || n.st.err != nil {
		return
	}
	heap := b.heap.Load()
	if heap == 0 {
		var est int64
		for _, h := range n.holders {
			est += h.bytes()
		}
		if est <= b.Limit {
			return
		}
	}
	var all []Holding
	for _, h := range n.holders {
		if u := h.usage(); u.Bytes > 0 {
			all = append(all, u)
		}
	}
	slices.SortStableFunc(all, func(x, y Holding) int { return cmp.Compare(y.Bytes, x.Bytes) })
	// The operators that matter: at most three, each holding at least an
	// eighth of what the first does.
	top := all[:min(len(all), 3)]
	for i, u := range top {
		if i > 0 && u.Bytes < top[0].Bytes/8 {
			top = top[:i]
			break
		}
	}
	n.st.fail(&MemoryError{Limit: b.Limit, Heap: heap, Held: top})
}

// poll counts a step of work and, every pollStride steps, checks the
// budget. It reports whether the run goes on.
func (s *runState) poll() bool {
	if s.err != nil {
		return false
	}
	if s.check == nil {
		return true
	}
	s.steps++
	if s.steps%pollStride == 0 {
		s.check()
	}
	return s.err == nil
}
