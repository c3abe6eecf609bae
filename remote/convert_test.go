package remote

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/resident/wire"
)

// oneBatch is a connection that returns one batch, then io.EOF.
type oneBatch struct {
	h    *wire.Hello
	b    *wire.Batch
	sent bool
}

func (c *oneBatch) Hello() *wire.Hello { return c.h }
func (c *oneBatch) Recv() (*wire.Batch, error) {
	if c.sent {
		return nil, io.EOF
	}
	c.sent = true
	return c.b, nil
}
func (c *oneBatch) Send(*wire.Command) error { return nil }
func (c *oneBatch) Close() error             { return nil }

// The receiving goroutine converts a batch a chunk at a time (chunkEnd),
// in order from the first packet to the last, each chunk's inputs those
// the run's own converter makes of its packets (the same entity IDs from
// the batch's definitions, the same values, times and keys).
func TestReceiveConvertsInChunks(t *testing.T) {
	cat := testkit.LoadCatalog(t, filepath.Join(testkit.Root(t), "testdata/tquel/os.sdl"))
	h := &wire.Hello{Name: "r", Sensors: []string{"SendMessage"}, MonoBase: 100, WallBase: 1000}
	ent := func(k uint64) wire.Value { return wire.Value{Kind: wire.VEntity, N: k} }
	b := &wire.Batch{Defs: []wire.EntityDef{{Key: 1, ID: "P1"}, {Key: 2, ID: "M1"}, {Key: 3, ID: "P2"}}}
	const n = 2*chunk + 123
	for i := range n {
		b.Packets = append(b.Packets, wire.Packet{TS: int64(200 + i/3), Kind: wire.PEvent, Vals: []wire.Value{ent(uint64(1 + 2*(i%2))), ent(2)}})
	}
	st := &connState{hello: h, converter: newConverter(h, 0, cat)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	batches, recycle := receive(ctx, []wire.Conn{&oneBatch{h: h, b: b}}, []*connState{st}, 1)
	st.define(b.Defs)
	want, err := st.inputs(nil, b.Packets, st)
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	for r := range batches {
		if r.err != nil {
			break
		}
		if r.lo != next || r.hi != chunkEnd(b.Packets, r.lo) {
			t.Fatalf("chunk [%d, %d), want [%d, %d)", r.lo, r.hi, next, chunkEnd(b.Packets, next))
		}
		if r.convErr != nil || len(r.ins) != r.hi-r.lo {
			t.Fatalf("chunk [%d, %d): %d inputs, %v", r.lo, r.hi, len(r.ins), r.convErr)
		}
		for k, in := range r.ins {
			if w := want[r.lo+k]; fmt.Sprint(in.T, in.Key, in.Kind, in.Vals) != fmt.Sprint(w.T, w.Key, w.Kind, w.Vals) {
				t.Fatalf("input %d: %v, want %v", r.lo+k, in, w)
			}
		}
		next = r.hi
		recycle(r.ins)
	}
	if next != n {
		t.Errorf("chunks covered %d of %d packets", next, n)
	}
}
