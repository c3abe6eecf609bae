package db

import (
	"testing"

	"github.com/tqmon/tqmon/algebra"
)

// TestObservationStored: the observation a writer is given is stored with
// the window, cut to it (nothing before its start, nothing past one after
// its end, nothing open), read back by Open, by History and by
// ObservationHistory; a database without one reads back none; a record
// that does not read is an error.
func TestObservationStored(t *testing.T) {
	dir := t.TempDir() + "/db"
	d, err := Create(dir, paperSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	if o := d.Observation(); o.Observed != nil || o.Lost != nil {
		t.Fatalf("a new database has an observation: %+v", o)
	}
	w, err := d.NewWriter(WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	row := func(rel string, v algebra.Value, from, to algebra.Time) algebra.Tuple {
		return algebra.Tuple{Vals: []algebra.Value{algebra.Str(rel), v}, From: from, To: to}
	}
	w.SetObservation(Observation{
		Observed: []algebra.Tuple{row("SendMessage", algebra.DurationVal(0), 5, algebra.Forever), row("RunningOn", algebra.DurationVal(1e6), 10, 50)},
		Lost:     []algebra.Tuple{row("SendMessage", algebra.Int(7), 20, 30), row("SendMessage", algebra.Int(2), 150, 160)},
	})
	w.SetWindow(algebra.Window{From: 10, To: 99})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d.Close()
	want := Observation{
		Observed: []algebra.Tuple{row("SendMessage", algebra.DurationVal(0), 10, 100), row("RunningOn", algebra.DurationVal(1e6), 10, 50)},
		Lost:     []algebra.Tuple{row("SendMessage", algebra.Int(7), 20, 30)},
	}
	d, err = Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string, got, want []algebra.Tuple) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
		for i := range got {
			if algebra.CompareTuples(got[i].Vals, want[i].Vals) != 0 || got[i].From != want[i].From || got[i].To != want[i].To {
				t.Errorf("%s: %v, want %v", what, got, want)
			}
		}
	}
	o := d.Observation()
	same("Observed", o.Observed, want.Observed)
	same("Lost", o.Lost, want.Lost)
	h, err := d.History(nil)
	if err != nil {
		t.Fatal(err)
	}
	same("History's Lost", h.Table(algebra.LostName).Rows, want.Lost)
	same("ObservationHistory's Observed", d.ObservationHistory().Table(algebra.ObservedName).Rows, want.Observed)
	d.Close()

	// A damaged record.
	rec := encodeObservation(want)
	rec[3] ^= 0xff
	if _, err := decodeObservation(rec); err == nil {
		t.Fatal("a damaged observation decodes")
	}
	for _, bad := range [][]byte{nil, {'O'}, encodeWindow(algebra.Window{From: 1, To: 2})} {
		if _, err := decodeObservation(bad); err == nil {
			t.Errorf("%x decodes as an observation", bad)
		}
	}
}

// TestFleetObservationRecord: a fleet's observation (each tuple with its
// host, a third value) is stored tagged 'H' and decodes with its hosts;
// damaged, it does not decode.
func TestFleetObservationRecord(t *testing.T) {
	want := Observation{
		Observed: []algebra.Tuple{
			{Vals: []algebra.Value{algebra.Str("SendMessage"), algebra.DurationVal(0), algebra.Str("web-1")}, From: 10, To: 90},
			{Vals: []algebra.Value{algebra.Str("SendMessage"), algebra.DurationVal(0), algebra.Str("web-2")}, From: 12, To: 40},
		},
		Lost: []algebra.Tuple{{Vals: []algebra.Value{algebra.Str("SendMessage"), algebra.Int(7), algebra.Str("web-1")}, From: 20, To: 30}},
	}
	rec := encodeObservation(want)
	if rec[0] != 'H' {
		t.Fatalf("tag %q, want 'H'", rec[0])
	}
	got, err := decodeObservation(rec)
	if err != nil {
		t.Fatal(err)
	}
	for i, rows := range [][2][]algebra.Tuple{{got.Observed, want.Observed}, {got.Lost, want.Lost}} {
		if len(rows[0]) != len(rows[1]) {
			t.Fatalf("%d: %v, want %v", i, rows[0], rows[1])
		}
		for j := range rows[0] {
			g, w := rows[0][j], rows[1][j]
			if len(g.Vals) != 3 || g.Vals[0] != w.Vals[0] || g.Vals[1] != w.Vals[1] || g.Vals[2] != w.Vals[2] || g.From != w.From || g.To != w.To {
				t.Errorf("%d.%d: %v [%d, %d), want %v [%d, %d)", i, j, g.Vals, g.From, g.To, w.Vals, w.From, w.To)
			}
		}
	}
	rec[len(rec)-6] ^= 0xff
	if _, err := decodeObservation(rec); err == nil {
		t.Error("a damaged fleet observation decodes")
	}
}
