package play

import (
	"context"
	"strings"
	"testing"

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
