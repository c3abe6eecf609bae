package progress

import (
	"bytes"
	"strings"
	"testing"
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
