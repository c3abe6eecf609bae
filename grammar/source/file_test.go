package source

import (
	"errors"
	"testing"
)

func TestFile(t *testing.T) {
	f := NewFile("q.tq", "range of p is P\r\n\tretrieve (é = p.A / 0);\nlast")
	for _, tt := range []struct {
		pos  Pos
		off  int
		ok   bool
		snip string
	}{
		{Pos{1, 1}, 0, true, "  range of p is P\n  ^"},
		{Pos{2, 12}, 28, true, "  \tretrieve (é = p.A / 0);\n  \t          ^"},
		{Pos{2, 13}, 30, true, "  \tretrieve (é = p.A / 0);\n  \t           ^"},
		{Pos{3, 5}, 47, true, "  last\n      ^"},
		{Pos{3, 7}, 0, false, "  last\n        ^"}, // past the end of the line
		{Pos{4, 1}, 0, false, ""},
		{Pos{}, 0, false, ""},
	} {
		off, ok := f.Offset(tt.pos)
		if off != tt.off || ok != tt.ok {
			t.Errorf("Offset(%v) = %d, %v; want %d, %v", tt.pos, off, ok, tt.off, tt.ok)
		}
		if got := f.Snippet(tt.pos); got != tt.snip {
			t.Errorf("Snippet(%v) = %q, want %q", tt.pos, got, tt.snip)
		}
	}
	if got, want := f.Cut(Pos{2, 2}, Pos{3, 1}), "retrieve (é = p.A / 0);\n"; got != want {
		t.Errorf("Cut = %q, want %q", got, want)
	}
	if got, want := f.Cut(Pos{3, 1}, Pos{}), "last"; got != want {
		t.Errorf("Cut to the end = %q, want %q", got, want)
	}
}

func TestErrorCarriesItsText(t *testing.T) {
	cause := errors.New("division by zero")
	e := NewFile("-e", "retrieve (x = 1 / 0)").Wrap(Pos{1, 17}, cause)
	if got, want := e.Error(), "-e:1:17: division by zero"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := e.Snippet(), "  retrieve (x = 1 / 0)\n                  ^"; got != want {
		t.Errorf("Snippet() = %q, want %q", got, want)
	}
	if !errors.Is(e, cause) {
		t.Error("the cause is not found")
	}
	var nilFile *File
	if e := nilFile.Wrap(Pos{2, 3}, cause); e.Error() != "2:3: division by zero" || e.Snippet() != "" {
		t.Errorf("without a file: %q, snippet %q", e.Error(), e.Snippet())
	}
	var l ErrorList
	l.AddIn(nil, "z.sdl", Pos{1, 7}, "clock period must be positive, not %s", "0s")
	if got, want := l.Error(), "z.sdl:1:7: clock period must be positive, not 0s"; got != want || l[0].Snippet() != "" {
		t.Errorf("AddIn without a text = %q, want %q", got, want)
	}
}
