package history

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
)

// TestParseTimeFastAgrees: wherever the fast path reads a time, it reads
// what algebra.ParseTime does; the texts are random integers, clock
// notation and RFC 3339 (valid and not: out-of-range parts, odd lengths,
// signs, spaces, Feb 29s, the edges of the fast path's range).
func TestParseTimeFastAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	num := func(max int64) string { return fmt.Sprint(rng.Int64N(max)) }
	pad := func(s string, n int) string { return strings.Repeat("0", max(0, n-len(s))) + s }
	gens := []func() string{
		func() string { return num(1 << rng.IntN(63)) },
		func() string { return "-" + num(1<<rng.IntN(63)) },
		func() string { return strings.Repeat("9", 1+rng.IntN(20)) },
		func() string {
			s := num(1e7) + ":" + pad(num(70), 1+rng.IntN(2)) + ":" + pad(num(70), 2)
			if rng.IntN(2) == 0 {
				s += "." + pad(num(1e10), 10)[:rng.IntN(11)]
			}
			if rng.IntN(3) == 0 {
				s = "-" + s
			}
			return s
		},
		func() string {
			s := fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d", 1850+rng.IntN(400), rng.IntN(14), rng.IntN(32), rng.IntN(25), rng.IntN(61), rng.IntN(61))
			if rng.IntN(2) == 0 {
				s += "." + pad(num(1e10), 10)[:rng.IntN(11)]
			}
			return s + []string{"Z", "z", "+01:00", "", "Z "}[rng.IntN(5)]
		},
		func() string {
			// A valid time, in every notation.
			tm := time.Unix(0, rng.Int64()).UTC()
			return []string{fmt.Sprint(tm.UnixNano()), tm.Format(time.RFC3339Nano), tm.Format(time.RFC3339), algebra.FormatTime(tm.UnixNano(), algebra.TimeClock)}[rng.IntN(4)]
		},
	}
	fast := 0
	for range 200000 {
		s := gens[rng.IntN(len(gens))]()
		got, ok := parseTimeFast([]byte(s))
		if !ok {
			continue
		}
		fast++
		want, err := algebra.ParseTime(s)
		if err != nil || got != want {
			t.Fatalf("%q: fast path %d, ParseTime %d, %v", s, got, want, err)
		}
	}
	if fast < 50000 {
		t.Errorf("the fast path read only %d texts", fast)
	}
}

// TestValueParserAgrees: the fast value parser reads what ParseValue does,
// or fails as it does.
func TestValueParserAgrees(t *testing.T) {
	cat := typesCatalog(t)
	in := &interner{}
	fields := []string{"", " ", "T1", " T1", "T1 ", "7", "-7", "+7", " 7", "1.5", "x", "Run", "run", " Run",
		"true", "1s", "0:00:01", "2026-01-01T00:00:00Z", "99999999999999999999", "é", "a, b"}
	for _, a := range cat.Lookup("Task").Attrs {
		p := newValueParser(a.Type)
		for _, f := range fields {
			got, gerr := p.parse([]byte(f), in)
			want, werr := ParseValue(f, a.Type)
			if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Errorf("%s %q: got %v, %v; want %v, %v", a.Type, f, got, gerr, want, werr)
			}
		}
	}
}
