package format

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
)

// TestAppendAgrees: the row writers write what encoding/csv over Row's
// strings and encoding/json field by field (refCSV, refJSON: the writers
// they replaced) write, over values that need every escape, in every time
// format.
func TestAppendAgrees(t *testing.T) {
	enum := algebra.NewEnumType([]string{"Ready", "Running"})
	attrs := []algebra.Attr{
		{Name: "Proc", Type: algebra.EntityType("Process")},
		{Name: "State", Type: algebra.Type{Kind: algebra.KindEnum, Enum: enum}},
		{Name: "Note", Type: algebra.TypeString},
		{Name: "Load", Type: algebra.TypeFloat},
		{Name: "Since", Type: algebra.TypeTime},
		{Name: "N", Type: algebra.TypeInt},
		{Name: "Ok", Type: algebra.TypeBool},
		{Name: "D", Type: algebra.TypeDuration},
	}
	strs := []string{"", "P1", "a, b", `say "hi"`, " lead", "\tlead", "\u00a0nbsp", "trail ", `\.`, `\.x`, "two\nlines", "cr\rhere",
		"<b>&amp;</b>", "a<b", "a>b", "a&b", "back\\slash", "é", "日本", "\x00nul", "\x7f", "bad\xffutf8", "\u2028sep", "{}", "null"}
	floats := []float64{0, -0.0, 0.5, 1e21, 1e-7, 123456789.125, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64}
	times := []algebra.Time{algebra.Beginning, algebra.Forever, 0, 1, -1, 1500000000, 3600e9 + 5, 1_700_000_000_123_456_789, -1_700_000_000_000_000_000}
	wall := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC).UnixNano()
	times = append(times, wall)
	var rows []algebra.Tuple
	for i := range max(len(strs), len(floats), len(times)) {
		s := strs[i%len(strs)]
		tm := times[i%len(times)]
		from := times[(i+3)%len(times)]
		if from == algebra.Forever {
			from = 7
		}
		rows = append(rows, algebra.Tuple{Vals: []algebra.Value{
			algebra.Entity(s), algebra.Enum("Running", 1), algebra.Str(strs[(i+5)%len(strs)]), algebra.Float(floats[i%len(floats)]),
			algebra.TimeVal(tm), algebra.Int(int64(i*7919 - 40000)), algebra.Bool(i%2 == 0), algebra.DurationVal(int64(i) * 1e8),
		}, From: from, To: times[(i+1)%len(times)]})
	}
	tfs := []algebra.TimeFormat{algebra.TimeAuto, algebra.TimeClock, algebra.TimeRFC3339, algebra.TimeNS, algebra.TimeRFC3339 | algebra.TimeLocal, algebra.TimeAuto | algebra.TimeLocal}
	for _, class := range []algebra.Class{algebra.ClassInterval, algebra.ClassEvent} {
		for _, attrsOf := range [][]algebra.Attr{attrs, append(slices.Clone(attrs), algebra.Attr{Name: "relation", Type: algebra.TypeString})} {
			rel := &algebra.Relation{Name: "R", Class: class, Attrs: attrsOf}
			for _, tf := range tfs {
				rw := &rowWriter{rel: rel, tf: tf}
				for i := range rows {
					row := rows[i]
					if len(attrsOf) > len(row.Vals) {
						row.Vals = append(slices.Clone(row.Vals), algebra.Str(strs[i%len(strs)]))
					}
					for _, prefix := range []string{"", "R", "a \"b\""} {
						if got, want := string(rw.csvRow(nil, prefix, &row)), refCSV(rel, &row, tf, prefix); got != want {
							t.Errorf("CSV, %s, row %d:\n got  %q\n want %q", tf, i, got, want)
						}
					}
					for _, name := range []string{"", "R", "<x>"} {
						var want strings.Builder
						refJSON(&want, name, rel, &row, tf)
						if got := string(rw.jsonRow(nil, name, &row)); got != want.String() {
							t.Errorf("JSON, %s, row %d:\n got  %s\n want %s", tf, i, got, want.String())
						}
					}
				}
				var want strings.Builder
				cw := csv.NewWriter(&want)
				cw.Write(append([]string{"relation"}, Header(rel)...))
				cw.Flush()
				if got := string(rw.csvRecord(nil, append([]string{"relation"}, Header(rel)...))); got != want.String() {
					t.Errorf("CSV header %q, want %q", got, want.String())
				}
			}
		}
	}
}

// refCSV is a row as encoding/csv writes Row's strings, after prefix.
func refCSV(rel *algebra.Relation, t *algebra.Tuple, tf algebra.TimeFormat, prefix string) string {
	var b strings.Builder
	cw := csv.NewWriter(&b)
	r := Row(rel, t, tf, "")
	if prefix != "" {
		r = append([]string{prefix}, r...)
	}
	cw.Write(r)
	cw.Flush()
	return b.String()
}

// refJSON writes a tuple of rel as a JSON object: "relation" (unless
// name is ""), the attributes, then at or from and to.
func refJSON(w io.Writer, name string, rel *algebra.Relation, t *algebra.Tuple, tf algebra.TimeFormat) error {
	var b strings.Builder
	b.WriteByte('{')
	field := func(name string, val any) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		v, _ := json.Marshal(val)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	timeVal := func(t algebra.Time) any {
		if tf == algebra.TimeNS && t != algebra.Beginning && t != algebra.Forever {
			return t
		}
		return algebra.FormatTime(t, tf)
	}
	if name != "" {
		key := RelationKey
		if slices.ContainsFunc(rel.Attrs, func(a algebra.Attr) bool { return a.Name == key }) {
			key = "_" + key
		}
		field(key, name)
	}
	for i, a := range rel.Attrs {
		v := t.Vals[i]
		switch v.K {
		case algebra.KindInt:
			field(a.Name, v.N)
		case algebra.KindFloat:
			f := v.F()
			if f != f || f > 1e308 || f < -1e308 { // NaN and infinities are not JSON numbers
				field(a.Name, v.Format(tf))
			} else {
				field(a.Name, f)
			}
		case algebra.KindBool:
			field(a.Name, v.B())
		case algebra.KindTime:
			field(a.Name, timeVal(v.N))
		default:
			field(a.Name, v.Format(tf))
		}
	}
	if rel.IsEvent() {
		field("at", timeVal(t.From))
	} else {
		field("from", timeVal(t.From))
		if t.To == algebra.Forever {
			field("to", nil) // open
		} else {
			field("to", timeVal(t.To))
		}
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
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
