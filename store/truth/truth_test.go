package truth

import (
	"testing"

	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/resident"
)

// TestSampledTruth: a sampled relation's truth keeps exactly the tuples
// valid at some tick of the base clock inside the window.
func TestSampledTruth(t *testing.T) {
	cat := testkit.CompileSpec(t, "t.sdl", `clock 10ns
entity type Processor
entity relation Processor(Processor: Processor)
interval relation Busy(Processor: Processor performer) sampled on performer
interval relation Held(Processor: Processor performer) traced on performer
`)
	var busy, held resident.SensorID
	for i, r := range cat.Relations {
		switch r.Name {
		case "Busy":
			busy = resident.SensorID(i)
		case "Held":
			held = resident.SensorID(i)
		}
	}
	rec := New(cat, 5, 5) // global = monotonic; the window opens at 5
	a := []resident.Value{{E: nil}}
	spans := [][2]int64{
		{0, 4},   // before the window (and ends before tick 10)
		{11, 19}, // between ticks 10 and 20
		{12, 21}, // covers tick 20
		{20, 21}, // begins at tick 20
		{29, 30}, // ends at tick 30 (exclusive)
		{41, 49}, // between ticks, and after the window's end (45)
		{38, 60}, // covers tick 40, inside the window
	}
	for i, s := range spans {
		for _, id := range []resident.SensorID{busy, held} {
			k := uint64(2*i) + uint64(id)*1000
			rec.Begin(id, k, a, s[0])
			rec.End(id, k, s[1])
		}
	}
	rec.Begin(busy, 100, a, 46) // open, beyond the window's last tick
	rec.Begin(busy, 101, a, 35) // open, covers tick 40
	h := rec.History(45)
	var got []int64
	for _, row := range h.Table("Busy").Rows {
		got = append(got, row.From)
	}
	want := []int64{12, 20, 35, 38}
	if len(got) != len(want) {
		t.Fatalf("Busy begins %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("Busy begins %v, want %v", got, want)
		}
	}
	if n := len(h.Table("Held").Rows); n != len(spans) {
		t.Errorf("traced Held kept %d of %d tuples; traced relations keep all", n, len(spans))
	}
}
