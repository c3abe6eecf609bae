package remote

import (
	"testing"

	"github.com/tqmon/tqmon/resident/wire"
)

// A batch is taken in chunks of at most chunk packets, each ending where
// the time changes (its watermark is just before the next packet's
// time), but a run of one time longer than a chunk stays whole; the
// chunks cover the batch.
func TestChunkEnd(t *testing.T) {
	mk := func(ts ...int64) []wire.Packet {
		var pk []wire.Packet
		for _, x := range ts {
			pk = append(pk, wire.Packet{TS: x})
		}
		return pk
	}
	seq := func(n int, f func(i int) int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	for _, c := range []struct {
		name string
		ts   []int64
		ends []int
	}{
		{"empty", nil, []int{0}},
		{"short", []int64{1, 2, 3}, []int{3}},
		{"distinct", seq(2*chunk+5, func(i int) int64 { return int64(i) }), []int{chunk, 2 * chunk, 2*chunk + 5}},
		{"run across the cut", seq(chunk+10, func(i int) int64 {
			if i >= chunk-3 && i < chunk+4 {
				return int64(chunk - 3)
			}
			return int64(i)
		}), []int{chunk - 3, chunk + 10}},
		{"one long run", seq(chunk+10, func(i int) int64 {
			if i < chunk+5 {
				return 7
			}
			return int64(i)
		}), []int{chunk + 5, chunk + 10}},
	} {
		pk := mk(c.ts...)
		var ends []int
		for lo := 0; ; {
			hi := chunkEnd(pk, lo)
			ends = append(ends, hi)
			if hi < len(pk) && (hi == lo || pk[hi-1].TS == pk[hi].TS) {
				t.Errorf("%s: a chunk ends at %d inside a run of time %d", c.name, hi, pk[hi].TS)
			}
			if lo = hi; lo >= len(pk) {
				break
			}
		}
		if len(ends) != len(c.ends) {
			t.Errorf("%s: chunks end at %v, want %v", c.name, ends, c.ends)
			continue
		}
		for i := range ends {
			if ends[i] != c.ends[i] {
				t.Errorf("%s: chunks end at %v, want %v", c.name, ends, c.ends)
				break
			}
		}
	}
}
