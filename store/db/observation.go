package db

import (
	"encoding/binary"

	"github.com/tqmon/tqmon/algebra"
)

// Observation is what a recording watched: the tuples of the built-in
// relations Observed (Relation, Period: each relation and span it was
// watched) and Lost (Relation, Count: each gap where packets were lost),
// values in their attribute order. It is stored beside the window, in one
// record (key 0x04), rewritten with it at each commit and cut to it: no
// Observed tuple reaches past what the window says was synced, none is
// left open ("forever"), none begins before the window.
type Observation struct {
	Observed, Lost []algebra.Tuple
}

// SetObservation sets the observation written with each flush (cut to the
// window written with it). The tuples are kept, not copied.
func (w *Writer) SetObservation(o Observation) { w.observation = &o }

// Observation is the observation the recording stored (empty for a
// database recorded without one: an import, or a tqmon before it).
func (d *DB) Observation() Observation {
	if d.observation == nil {
		return Observation{}
	}
	return *d.observation
}

// ObservationHistory is a history of the database's catalog holding only
// the observation's tuples (the Observed and Lost tables).
func (d *DB) ObservationHistory() *algebra.History {
	h := algebra.NewHistory(d.cat)
	d.fillObservation(h)
	return h
}

// fillObservation sets h's Observed and Lost tables to the observation.
func (d *DB) fillObservation(h *algebra.History) {
	o := d.Observation()
	h.Table(algebra.ObservedName).Rows = append([]algebra.Tuple(nil), o.Observed...)
	h.Table(algebra.LostName).Rows = append([]algebra.Tuple(nil), o.Lost...)
}

// within cuts the observation to what window win says was watched: tuples
// begin no earlier than its start and end no later than one past its end
// (it is inclusive); those left empty go.
func (o Observation) within(win algebra.Window) Observation {
	cut := func(rows []algebra.Tuple) []algebra.Tuple {
		var out []algebra.Tuple
		to := algebra.Next(win.To)
		for _, r := range rows {
			r.From, r.To = max(r.From, win.From), min(r.To, to)
			if r.To > r.From {
				out = append(out, r)
			}
		}
		return out
	}
	return Observation{Observed: cut(o.Observed), Lost: cut(o.Lost)}
}

// The record: 'O', then Observed and Lost, each a count of tuples of
// (relation name, the second value as a varint, from, to as varints),
// then a CRC. A fleet's (its tuples have a third value, the Host:
// algebra.Catalog.MarkFleet) is tagged 'H' instead, and each tuple's
// host follows its relation name.
func encodeObservation(o Observation) []byte {
	fleet := false
	for _, r := range append(o.Observed[:len(o.Observed):len(o.Observed)], o.Lost...) {
		fleet = fleet || len(r.Vals) > 2
	}
	out := []byte{'O'}
	if fleet {
		out[0] = 'H'
	}
	for _, rows := range [][]algebra.Tuple{o.Observed, o.Lost} {
		out = binary.AppendUvarint(out, uint64(len(rows)))
		for _, r := range rows {
			out = appendStr(out, r.Vals[0].S)
			if fleet {
				host := ""
				if len(r.Vals) > 2 {
					host = r.Vals[2].S
				}
				out = appendStr(out, host)
			}
			out = binary.AppendVarint(out, r.Vals[1].N)
			out = binary.AppendVarint(out, r.From)
			out = binary.AppendVarint(out, r.To)
		}
	}
	return appendCRC(out)
}

func decodeObservation(data []byte) (Observation, error) {
	tag := byte('O')
	if len(data) > 0 && data[0] == 'H' {
		tag = 'H' // a fleet's: each tuple has its host
	}
	r := openRecord(data, tag, "observation")
	var o Observation
	for i, second := range []func(int64) algebra.Value{algebra.DurationVal, algebra.Int} {
		n := r.count(4)
		rows := make([]algebra.Tuple, 0, n)
		for range n {
			rel := r.str()
			var host string
			if tag == 'H' {
				host = r.str()
			}
			v := r.varint()
			from, to := r.varint(), r.varint()
			if r.err != nil {
				break
			}
			if to <= from {
				r.fail("an empty span [%d, %d)", from, to)
				break
			}
			vals := []algebra.Value{algebra.Str(rel), second(v)}
			if tag == 'H' {
				vals = append(vals, algebra.Str(host))
			}
			rows = append(rows, algebra.Tuple{Vals: vals, From: from, To: to})
		}
		if i == 0 {
			o.Observed = rows
		} else {
			o.Lost = rows
		}
	}
	return o, r.end()
}
