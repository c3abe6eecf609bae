package exec

import (
	"fmt"
	"testing"

	"github.com/tqmon/tqmon/algebra"
)

// TestChunkEncoderCodes holds the chunk encoder's columns to the rows'
// values, row for row in their order, over chunks whose rows share their
// values' slices (as a history's loader hands them: the codes are kept by
// slice) and over chunks whose rows do not (the encoder stops keeping
// them), with rows at one time in an order other than their values'.
func TestChunkEncoderCodes(t *testing.T) {
	rel := &algebra.Relation{Name: "R", Attrs: []algebra.Attr{
		{Name: "A", Type: algebra.Type{Kind: algebra.KindEntity, Entity: "E"}},
		{Name: "B", Type: algebra.Type{Kind: algebra.KindEntity, Entity: "F"}},
		{Name: "N", Type: algebra.Type{Kind: algebra.KindInt}}}}
	shared := make([][]algebra.Value, 21)
	for i := range shared {
		shared[i] = []algebra.Value{algebra.Entity(fmt.Sprint("P", 9-i%10)), algebra.Entity(fmt.Sprint("M", i%7)), algebra.Int(int64(i))}
	}
	for _, share := range []bool{true, false} {
		enc := &chunkEncoder{h: chunkHistory(rel), rel: rel, memo: map[*algebra.Value]int32{}}
		var buf []algebra.Tuple
		for c := range 4 {
			buf = buf[:0]
			for i := range 4500 { // more than memoProbe: decided in the first chunk
				j := c*4500 + i
				vals := shared[j%len(shared)]
				if !share {
					vals = append([]algebra.Value(nil), vals...)
				}
				buf = append(buf, algebra.Tuple{Vals: vals, From: algebra.Time(j / 3), To: algebra.Time(j + 5)})
			}
			cols := enc.encode(buf)
			for i := range buf {
				for a := range 2 {
					if got := cols.Dicts[a].Names()[cols.Codes[a][i]]; got != buf[i].Vals[a].S {
						t.Fatalf("shared %v, chunk %d row %d attribute %d: %s, want %s", share, c, i, a, got, buf[i].Vals[a].S)
					}
				}
				if cols.Codes[2][i] != buf[i].Vals[2].N || cols.From[i] != buf[i].From || cols.To[i] != buf[i].To {
					t.Fatalf("shared %v, chunk %d row %d: %d %d %d, want %v", share, c, i, cols.Codes[2][i], cols.From[i], cols.To[i], buf[i])
				}
			}
		}
		if enc.off == share || enc.tries < memoProbe {
			t.Fatalf("shared %v: keeping codes by slice is off: %v", share, enc.off)
		}
	}
}
