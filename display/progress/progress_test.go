package progress

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	for _, c := range []struct {
		frac float64
		want string
	}{
		{0, "[>         ]   0%  x"},
		{0.5, "[=====>    ]  50%  x"},
		{1, "[==========] 100%  x"},
		{2, "[==========] 100%  x"},
	} {
		if got := Line(c.frac, 10, "x"); got != c.want {
			t.Errorf("Line(%v) = %q, want %q", c.frac, got, c.want)
		}
	}
}

// TestBar: a disabled bar writes nothing; an enabled one draws in place,
// clears around guarded output and erases itself at the end.
func TestBar(t *testing.T) {
	var off bytes.Buffer
	b := New(&off, false)
	b.Update(0.5, "half", true)
	b.Guard(&off).Write([]byte("result\n"))
	b.Done()
	if off.String() != "result\n" {
		t.Errorf("disabled bar wrote %q", off.String())
	}
	var term bytes.Buffer
	b = New(&term, true)
	b.Update(0.25, "quarter", true)
	b.Guard(&term).Write([]byte("row\n"))
	b.Done()
	got := term.String()
	if !strings.HasPrefix(got, "\r[=======>") || !strings.Contains(got, "\r\x1b[Krow\n\r[=======>") || !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("terminal output %q", got)
	}
}

// TestFit: a bar never reaches the terminal's last column (a wrapped line
// is neither redrawn in place nor erased): it narrows, then cuts its note,
// then drops it; paused notes, the longest, fit too.
func TestFit(t *testing.T) {
	note := "2:50:00 / 4:00:00  ×1  paused (space: resume, n: step)"
	for _, cols := range []int{0, 8, 20, 40, 60, 80, 120} {
		got := Fit(0.5, 30, note, cols)
		n := utf8.RuneCountInString(got)
		switch {
		case cols == 0 || cols >= 100:
			if got != Line(0.5, 30, note) {
				t.Errorf("cols %d: %q changed though it fits", cols, got)
			}
		case n >= cols:
			t.Errorf("cols %d: %q is %d wide", cols, got, n)
		case cols >= 40 && !strings.Contains(got, "50%"):
			t.Errorf("cols %d: %q lost its percentage", cols, got)
		case cols == 60 && !strings.HasSuffix(got, "…"):
			t.Errorf("cols %d: %q: the note is not cut with an ellipsis", cols, got)
		}
	}
	// The bar on a 40-column terminal: each redraw fits, and Done erases
	// it.
	var term bytes.Buffer
	b := New(&term, true)
	b.cols = func() int { return 40 }
	b.Update(0.5, note, true)
	b.Done()
	for _, l := range strings.Split(term.String(), "\r") {
		l = strings.TrimSuffix(l, "\x1b[K")
		if utf8.RuneCountInString(l) >= 40 {
			t.Errorf("line %q does not fit 40 columns", l)
		}
	}
	if !strings.HasSuffix(term.String(), "\r\x1b[K") {
		t.Errorf("not erased at the end: %q", term.String())
	}
}
