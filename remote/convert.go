package remote

import (
	"context"
	"fmt"
	"math"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/resident/wire"
)

// A converter turns one resident's packets into the network's inputs:
// its entity keys into the identifiers its batches define, its values
// into the catalog's, its clock into the global one. The run's
// goroutine has one (connState's: probes, and take when a batch came
// unconverted); the goroutine receiving the resident's batches has
// another (receive), which converts each batch as it comes — in
// parallel with the run's network working on the previous one — and
// sees every batch's definitions in the same order, so both name every
// key alike. Neither shares mutable state with the other.
type converter struct {
	h   *wire.Hello
	idx int
	cat *algebra.Catalog
	// defs are the entity IDs by key, as the batches defined them;
	// recent, the keys values saw last (entity), and their IDs ("": none).
	defs     map[uint64]string
	recent   [2]uint64
	recentID [2]string
	block    []algebra.Value // what is left of the packets' value block (values)
	crels    []*algebra.Relation
	// kept, when set, are the attributes values converts per relation
	// (exec.Network.Kept, with the flag holder): the others are zero, as
	// α leaves them, and α takes the values without copying them. nil
	// (a tap records every tuple whole): every attribute. keptOf is it
	// per sensor (relOf).
	kept   map[string][]int
	keptOf [][]int
}

func newConverter(h *wire.Hello, idx int, cat *algebra.Catalog) converter {
	return converter{h: h, idx: idx, cat: cat, defs: map[uint64]string{}}
}

func (cv *converter) global(mono int64) algebra.Time {
	if mono == math.MaxInt64 {
		return algebra.Forever
	}
	return cv.h.WallBase + (mono - cv.h.MonoBase)
}

// define takes the entity names a batch defines.
func (cv *converter) define(defs []wire.EntityDef) {
	for _, d := range defs {
		cv.defs[d.Key] = d.ID
		if cv.cat.Fleet {
			// Qualified once, where it is named: two hosts' P1 are two.
			cv.defs[d.Key] = algebra.QualifyEntity(cv.h.Name, d.ID)
		}
		cv.recentID = [2]string{} // (keys are named once; but if anew, looked up again)
	}
}

// entity returns the ID the resident named entity key k by. Consecutive
// packets mostly name the same one or two entities (a thread, its
// process): those are found without a map lookup.
func (cv *converter) entity(k uint64) (string, error) {
	for j, r := range cv.recent {
		if r == k && cv.recentID[j] != "" {
			return cv.recentID[j], nil
		}
	}
	id, ok := cv.defs[k]
	if !ok {
		return "", fmt.Errorf("resident %s: entity key %d used before it was named", cv.h.Name, k)
	}
	cv.recent[1], cv.recentID[1] = cv.recent[0], cv.recentID[0]
	cv.recent[0], cv.recentID[0] = k, id
	return id, nil
}

// relOf returns the catalog's relation of sensor id (nil: none), and the
// attributes to convert (nil: all), looked up once.
func (cv *converter) relOf(id uint16) (*algebra.Relation, []int) {
	if cv.crels == nil {
		cv.crels = make([]*algebra.Relation, len(cv.h.Sensors))
		cv.keptOf = make([][]int, len(cv.h.Sensors))
	}
	if cv.crels[id] == nil {
		cv.crels[id] = cv.cat.Lookup(cv.h.Sensors[id])
		if r := cv.crels[id]; r != nil && cv.kept != nil {
			cv.keptOf[id] = cv.kept[r.Name]
		}
	}
	return cv.crels[id], cv.keptOf[id]
}

// inputs appends to out the inputs of packets, made for st (which it
// only names); on an error, those before the packet at fault.
func (cv *converter) inputs(out []Input, pkts []wire.Packet, st *connState) ([]Input, error) {
	for _, p := range pkts {
		if int(p.Sensor) >= len(cv.h.Sensors) {
			return out, fmt.Errorf("resident %s: packet of unknown sensor %d", cv.h.Name, p.Sensor)
		}
		rel, keep := cv.relOf(p.Sensor)
		if rel == nil {
			return out, fmt.Errorf("resident %s: packet of %s, which the catalog lacks", cv.h.Name, cv.h.Sensors[p.Sensor])
		}
		vals, err := cv.values(rel, p.Vals, keep)
		if err != nil {
			return out, err
		}
		it := Input{T: cv.global(p.TS), Rel: rel.Name, Key: uint64(cv.idx)<<56 | p.Tuple, From: cv.global(p.Begin), Vals: vals, phase: 1, state: st, sensor: p.Sensor}
		switch p.Kind {
		case wire.PEntityBegin:
			it.Entity, it.Begin = true, true
		case wire.PEntityEnd:
			it.Entity, it.phase = true, 0
		case wire.PEvent:
			it.Kind = stream.PacketEvent
		case wire.PBegin:
			it.Kind = stream.PacketBegin
			if p.Begin == 0 {
				it.From = it.T // reported as it happened
			}
		case wire.PEnd:
			it.Kind, it.phase = stream.PacketEnd, 0
			if rel.Strategy.Kind == algebra.Sampled {
				it.Kind = stream.PacketSampleEnd
			}
		case wire.PWhole:
			it.Kind, it.phase = stream.PacketWhole, 0
		case wire.PSample:
			it.Kind = stream.PacketSample
		default:
			return out, fmt.Errorf("resident %s: packet of unknown kind %d", cv.h.Name, p.Kind)
		}
		out = append(out, it)
	}
	return out, nil
}

// valueBlock is how many values a block of packet values holds.
const valueBlock = 1024

// values converts a packet's values to the catalog's; a fleet's
// (algebra.Catalog.Fleet) add the host, last, and qualify entity
// identifiers by it. keep, if not nil, are the attributes to convert
// (increasing): the others are left zero.
func (cv *converter) values(rel *algebra.Relation, vs []wire.Value, keep []int) ([]algebra.Value, error) {
	fleet := cv.cat.Fleet
	n := len(rel.Attrs)
	if fleet {
		n-- // Host: the monitor's, not the resident's
	}
	if len(vs) != n {
		return nil, fmt.Errorf("resident %s: %s packet with %d values, want %d", cv.h.Name, rel.Name, len(vs), n)
	}
	if len(cv.block) < len(rel.Attrs) {
		// Values are cut from blocks: one allocation for many packets (a
		// block lives while any tuple holds values of it).
		cv.block = make([]algebra.Value, max(valueBlock, len(rel.Attrs)))
	}
	out := cv.block[:len(rel.Attrs):len(rel.Attrs)]
	cv.block = cv.block[len(rel.Attrs):]
	if fleet {
		out[n] = algebra.Str(cv.h.Name)
	}
	for i, v := range vs {
		if keep != nil {
			if len(keep) == 0 || keep[0] != i {
				continue
			}
			keep = keep[1:]
		}
		a := rel.Attrs[i]
		switch a.Type.Kind {
		case algebra.KindEntity:
			if v.N == 0 {
				out[i] = algebra.Entity("") // not kept by a fragment (or absent)
				continue
			}
			id, err := cv.entity(v.N)
			if err != nil {
				return nil, err
			}
			out[i] = algebra.Entity(id) // a fleet's qualified when defined (take)
		case algebra.KindEnum:
			n := int(v.N)
			if n >= len(a.Type.Enum.Members) {
				return nil, fmt.Errorf("resident %s: %s.%s ordinal %d out of range", cv.h.Name, rel.Name, a.Name, n)
			}
			out[i] = algebra.Enum(a.Type.Enum.Members[n], n)
		case algebra.KindInt:
			out[i] = algebra.Int(int64(v.N))
		case algebra.KindFloat:
			out[i] = algebra.Float(math.Float64frombits(v.N))
		case algebra.KindString:
			out[i] = algebra.Str(v.S)
		case algebra.KindBool:
			out[i] = algebra.Bool(v.N != 0)
		case algebra.KindTime:
			out[i] = algebra.TimeVal(int64(v.N))
		case algebra.KindDuration:
			out[i] = algebra.DurationVal(int64(v.N))
		}
	}
	return out, nil
}

// received is one Recv of resident i's connection, or (receive, given
// states) a chunk of the batch it returned: the packets b.Packets[lo:hi]
// converted (ins), unless conversion failed (convErr). A batch's chunks
// come in order, the first at lo 0, the last at hi len(b.Packets).
type received struct {
	i       int
	b       *wire.Batch
	err     error
	lo, hi  int
	ins     []Input
	convErr error
}

// receive reads every connection's batches into one channel (of buffer
// n), each until its Recv fails (that error sent too) or ctx is done.
// Given states, each goroutine also converts its batches' packets, a
// chunk at a time (chunkEnd), with a converter of its own for states[i],
// as the run's goroutine works on the network: what the run holds of a
// batch converted and not yet queued is at most n+2 chunks (one being
// converted, n waiting, one being taken), whose slices come back
// through recycle.
func receive(ctx context.Context, conns []wire.Conn, states []*connState, n int) (<-chan received, func([]Input)) {
	out := make(chan received, n)
	free := make(chan []Input, len(conns)*(n+2))
	for i, c := range conns {
		var cv converter
		if states != nil {
			cv = newConverter(states[i].hello, i, states[i].cat)
			cv.kept = states[i].kept
		}
		send := func(r received) bool {
			select {
			case out <- r:
				return true
			case <-ctx.Done():
				return false
			}
		}
		go func() {
			for {
				b, err := c.Recv()
				if err != nil || states == nil {
					if !send(received{i: i, b: b, err: err}) || err != nil {
						return
					}
					continue
				}
				cv.define(b.Defs)
				pk := b.Packets
				for lo := 0; ; {
					hi := chunkEnd(pk, lo)
					var ins []Input
					select {
					case ins = <-free:
					default:
						ins = make([]Input, 0, hi-lo)
					}
					r := received{i: i, b: b, lo: lo, hi: hi}
					r.ins, r.convErr = cv.inputs(ins, pk[lo:hi], states[i])
					if !send(r) {
						return
					}
					if r.convErr != nil {
						return // the run ends with it
					}
					if lo = hi; lo == len(pk) {
						break
					}
				}
			}
		}()
	}
	recycle := func(ins []Input) {
		clear(ins) // their values are the network's now
		select {
		case free <- ins[:0]:
		default:
		}
	}
	return out, recycle
}
