package query

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/tqmon/tqmon/algebra/exec"
)

// WithBudget returns the program to run within budget b: every network
// its runs build (here, over a database, live) checks b (exec.Budget).
// The program itself is shared, not copied.
func (p *Program) WithBudget(b *exec.Budget) *Program {
	q := *p
	q.budget = b
	return &q
}

// Budget is the memory budget the program's runs honour (nil: none).
func (p *Program) Budget() *exec.Budget { return p.budget }

// How often the watchdog reads the heap size, and how often at most it
// collects garbage to learn the live heap.
const (
	watchEvery = 10 * time.Millisecond
	gcEvery    = 100 * time.Millisecond
)

// Watch starts the watchdog of budget b and returns the function that
// stops it (and waits for it). Every 10 ms it reads the size of the heap's
// objects (runtime/metrics); once that is over b.Limit it collects garbage
// (at most every 100 ms) and, if the heap live after the collection is
// still over, reports it (b.Over): the run stops at its next check. The
// budget is thus the live heap of the whole process while the run runs —
// the subject's tables it reads included — not the garbage awaiting
// collection. With no budget (nil, or Limit ≤ 0) it does nothing.
func Watch(b *exec.Budget) (stop func()) {
	if b == nil || b.Limit <= 0 {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(watchEvery)
		defer tick.Stop()
		objects := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var collected time.Time
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(objects)
			if heapBytes(objects[0]) <= b.Limit {
				continue
			}
			if time.Since(collected) >= gcEvery {
				runtime.GC()
				collected = time.Now()
			}
			metrics.Read(live)
			if n := heapBytes(live[0]); n > b.Limit {
				b.Over(n)
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

func heapBytes(s metrics.Sample) int64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(min(s.Value.Uint64(), math.MaxInt64))
}

// DefaultMaxMemoryFallback is the default budget where the machine's
// memory cannot be learnt.
const DefaultMaxMemoryFallback = 4 << 30

// DefaultMaxMemory is the default memory budget of a query: half of the
// memory available to the process — the machine's physical memory, or
// the cgroup's limit when that is lower — else 4 GiB. Half, because tqmon
// usually shares the machine with what it monitors (a live subject, the
// kernel's own work) and a runaway query must leave that room; the
// queries it stops grow without bound (gigabytes a minute), so a lower
// fraction would stop nothing sooner that matters.
func DefaultMaxMemory() int64 {
	if m := availableMemory(); m > 0 {
		return m / 2
	}
	return DefaultMaxMemoryFallback
}

// Bytes is a size in bytes that reads itself as ParseBytes does and
// prints itself as exec.FormatBytes does: a command-line flag's value
// (--max-memory SIZE).
type Bytes int64

func (b *Bytes) String() string { return exec.FormatBytes(int64(*b)) }
func (b *Bytes) Type() string   { return "SIZE" }
func (b *Bytes) Set(s string) error {
	n, err := ParseBytes(s)
	if err == nil {
		*b = Bytes(n)
	}
	return err
}

// ParseBytes reads a size: a number with an optional unit — B, KiB, MiB,
// GiB, TiB (powers of 1024; K, M, G and T too) or kB, MB, GB, TB (powers
// of 1000) — as in 512MiB, 2GB, 1.5G or 1048576. 0 is allowed.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	mult, ok := unitBytes(strings.ToLower(unit))
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (want B, KiB, MiB, GiB, TiB, kB, MB, GB or TB)", s, unit)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("size %q: want a number and a unit, as in 512MiB or 2GB", s)
	}
	v := f * float64(mult)
	if v >= math.MaxInt64 {
		return 0, errors.New("size " + strconv.Quote(s) + " is too large")
	}
	return int64(v), nil
}

// unitBytes is the number of bytes in a unit of ParseBytes.
func unitBytes(unit string) (int64, bool) {
	switch unit {
	case "", "b":
		return 1, true
	case "k", "kib":
		return 1 << 10, true
	case "m", "mib":
		return 1 << 20, true
	case "g", "gib":
		return 1 << 30, true
	case "t", "tib":
		return 1 << 40, true
	case "kb":
		return 1e3, true
	case "mb":
		return 1e6, true
	case "gb":
		return 1e9, true
	case "tb":
		return 1e12, true
	}
	return 0, false
}
