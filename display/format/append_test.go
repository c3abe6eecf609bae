package format

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
)

// A stream's rows, written into one buffer by appending (no csv.Writer, no
// string per value, an RFC 3339 time's second reused), are byte for byte
// what Row and encoding/csv write: fields that need quotes, times in
// every format and zone, at and around whole seconds, before 1970, at
// the beginning and forever, several results.
func TestStreamAppendsAsRowWrites(t *testing.T) {
	iv, ev := sample()
	for _, s := range []string{"", " lead", "\t", `\.`, "a\nb", "cr\r", `q"q`, "x,y", "plain", "é,"} {
		iv.Add([]algebra.Value{algebra.Entity(s), algebra.Enum("Ready", 0), algebra.Str(s), algebra.Float(1), algebra.TimeVal(0)}, 1, 2)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	wall := int64(1796900000e9)
	for _, at := range []int64{wall, wall + 1, wall + 999999999, wall + 1e9, wall + 1e9 + 120, wall + 500000000, -wall - 1, -wall + 7, 12, 3600e9 + 5e8} {
		ev.AddEvent([]algebra.Value{algebra.Int(at), algebra.Bool(false), algebra.DurationVal(at)}, at)
	}
	for range 300 {
		at := wall + rng.Int64N(5e9)
		if rng.IntN(4) == 0 {
			at -= at % 1000
		}
		ev.AddEvent([]algebra.Value{algebra.Int(-at), algebra.Bool(true), algebra.DurationVal(1)}, at)
	}
	for _, kind := range []Kind{CSV, Table} {
		for _, tf := range []algebra.TimeFormat{algebra.TimeAuto, algebra.TimeRFC3339, algebra.TimeRFC3339 | algebra.TimeLocal, algebra.TimeClock, algebra.TimeNS} {
			for _, tabs := range [][]*algebra.Table{{ev}, {iv, ev}} {
				o := Options{Kind: kind, Time: tf}
				var got bytes.Buffer
				var rels []*algebra.Relation
				for _, tab := range tabs {
					rels = append(rels, tab.Rel)
				}
				s := NewStream(&got, o, rels)
				for i, tab := range tabs {
					for j := range tab.Rows {
						r := &tab.Rows[j]
						if tab.Rel.IsEvent() {
							s.Event(i, r.Vals, r.From)
						} else {
							s.Begin(i, j, r.Vals, r.From)
							s.End(i, j, r.To)
						}
					}
				}
				want := rowsAsWritten(tabs, o)
				if got.String() != want {
					g, w := strings.Split(got.String(), "\n"), strings.Split(want, "\n")
					for k := range min(len(g), len(w)) {
						if g[k] != w[k] {
							t.Fatalf("%v time format %d, %d results: line %d is\n%q, want\n%q", kind, tf, len(tabs), k+1, g[k], w[k])
						}
					}
					t.Fatalf("%v time format %d: %d lines, want %d", kind, tf, len(g), len(w))
				}
			}
		}
	}
}

// rowsAsWritten is what a stream wrote before appending: each row through
// Row and a csv.Writer, or the table form's "name=value" line.
func rowsAsWritten(tabs []*algebra.Table, o Options) string {
	var b strings.Builder
	cw := csv.NewWriter(&b)
	for i, tab := range tabs {
		name := RelName(tab.Rel, i)
		if o.Kind == CSV {
			h := Header(tab.Rel)
			if len(tabs) > 1 {
				h = append([]string{"relation"}, h...)
			}
			cw.Write(h)
		}
		for j := range tab.Rows {
			r := tab.Rows[j]
			if tab.Rel.IsEvent() {
				r.To = algebra.Next(r.From)
			}
			if o.Kind == CSV {
				row := Row(tab.Rel, &r, o.Time, "")
				if len(tabs) > 1 {
					row = append([]string{name}, row...)
				}
				cw.Write(row)
				continue
			}
			cw.Flush()
			row := Row(tab.Rel, &r, o.Time, Open)
			fmt.Fprintf(&b, "%s:", name)
			for k, h := range Header(tab.Rel)[:len(row)] {
				fmt.Fprintf(&b, " %s=%s", h, row[k])
			}
			b.WriteString("\n")
		}
	}
	cw.Flush()
	return b.String()
}

// A stream writes a CSV row allocating nothing: before, every row made a
// csv.Writer (a 4 KiB buffer), a []string and a string per value — 900 MB
// for a kernel consumer's 220,000 rows.
func TestStreamRowAllocatesNothing(t *testing.T) {
	rel := &algebra.Relation{Name: "S", Class: algebra.ClassEvent, Attrs: []algebra.Attr{
		{Name: "Name", Type: algebra.TypeString}, {Name: "Thread", Type: algebra.EntityType("Thread")}, {Name: "N", Type: algebra.TypeInt}}}
	vals := []algebra.Value{algebra.Str("getppid"), algebra.Entity("4242"), algebra.Int(123456)}
	for _, kind := range []Kind{CSV, Table} {
		s := NewStream(discard{}, Options{Kind: kind}, []*algebra.Relation{rel})
		at := int64(1796900000e9)
		if n := testing.AllocsPerRun(1000, func() {
			at += 777
			s.Event(0, vals, at)
		}); n != 0 {
			t.Errorf("%v: %.1f allocations per row", kind, n)
		}
	}
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }
