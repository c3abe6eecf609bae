package play

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// TestReplayKeys: the keys of an interactive replay drive the player.
func TestReplayKeys(t *testing.T) {
	p := NewPlayer(context.Background(), emptySource{}, Options{Speed: 4, Start: at(0), End: algebra.Forever, Drain: true})
	p.Key(' ')
	if !p.Paused() {
		t.Error("space does not pause")
	}
	p.Key(' ')
	if p.Paused() {
		t.Error("space does not resume")
	}
	p.Key('n')
	if !p.Paused() {
		t.Error("n does not pause to step")
	}
	p.Key('+')
	if p.Speed() != 8 {
		t.Errorf("+: speed %v", p.Speed())
	}
	p.Key('-')
	p.Key('-')
	if p.Speed() != 2 {
		t.Errorf("-: speed %v", p.Speed())
	}
	p.Key('q')
	if _, _, ok, _ := p.Next(); ok {
		t.Error("q does not stop")
	}
	if note := p.Note(algebra.Window{From: 0, To: 10e9}); !strings.Contains(note, "paused") || !strings.Contains(note, "×2") {
		t.Errorf("progress note %q", note)
	}
}

type emptySource struct{}

func (emptySource) Next() (string, stream.Elem, bool, error) { return "", stream.Elem{}, false, nil }

// TestNotePrecision: a note gives times to a thousandth of the span at
// most (whole seconds for a three-hour replay), not to the nanosecond.
func TestNotePrecision(t *testing.T) {
	for _, c := range []struct {
		span algebra.Window
		unit int64
	}{
		{algebra.Window{From: 3600e9, To: 4 * 3600e9}, 1e9},
		{algebra.Window{From: 0, To: 5e9}, 1e6},
		{algebra.Window{From: 0, To: 500}, 1},
		{algebra.Window{From: 0, To: algebra.Forever}, 1},
	} {
		if u := NoteUnit(c.span); u != c.unit {
			t.Errorf("NoteUnit(%v) = %d, want %d", c.span, u, c.unit)
		}
	}
	start := algebra.Time(3600e9 + 1234567891)
	p := NewPlayer(context.Background(), emptySource{}, Options{Speed: 1, Start: &start, End: algebra.Forever, Drain: true, Paused: true})
	defer p.Stop()
	note := p.Note(algebra.Window{From: 3600e9, To: 4 * 3600e9})
	if !strings.HasPrefix(note, "1:00:01 / 4:00:00") {
		t.Errorf("note %q, want whole seconds", note)
	}
	wall := algebra.Time(1_700_000_000_123_456_789)
	p = NewPlayer(context.Background(), emptySource{}, Options{Speed: 1, Start: &wall, End: algebra.Forever, Drain: true, Paused: true})
	defer p.Stop()
	note = p.Note(algebra.Window{From: wall, To: wall + 10e9})
	if !strings.HasPrefix(note, "2023-11-14T22:13:20.12Z / 2023-11-14T22:13:30.12Z") {
		t.Errorf("wall-clock note %q, want hundredths (a thousandth of 10 s)", note)
	}
}

// TestNoteTZ: the progress note prints wall-clock times in UTC, or in the
// local time zone with Options.Local (--tz local; here a fixed +05:30);
// a subject's own clock prints as H:MM:SS either way.
func TestNoteTZ(t *testing.T) {
	saved := time.Local
	time.Local = time.FixedZone("IST", 5*3600+30*60)
	t.Cleanup(func() { time.Local = saved })
	wall := algebra.Time(1_700_000_000_000_000_000)
	own := algebra.Time(3600e9)
	for _, c := range []struct {
		local bool
		start algebra.Time
		want  string
	}{
		{false, wall, "2023-11-14T22:13:20Z / 2023-11-14T22:13:30Z"},
		{true, wall, "2023-11-15T03:43:20+05:30 / 2023-11-15T03:43:30+05:30"},
		{true, own, "1:00:00 / 1:00:10"},
	} {
		p := NewPlayer(context.Background(), emptySource{}, Options{Speed: 1, Start: &c.start, End: algebra.Forever, Drain: true, Paused: true, Local: c.local})
		note := p.Note(algebra.Window{From: c.start, To: c.start + 10e9})
		p.Stop()
		if !strings.HasPrefix(note, c.want) {
			t.Errorf("Local %v: note %q, want %s", c.local, note, c.want)
		}
	}
}
