package format

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rivo/uniseg"

	"github.com/tqmon/tqmon/algebra"
)

// Kind is an output format.
type Kind uint8

const (
	Table Kind = iota
	CSV
	JSONL
)

// ParseKind reads a --format value.
func ParseKind(s string) (Kind, error) {
	switch s {
	case "table":
		return Table, nil
	case "csv":
		return CSV, nil
	case "jsonl":
		return JSONL, nil
	}
	return 0, fmt.Errorf("unknown format %q (want table, csv or jsonl)", s)
}

// Options say how to write.
type Options struct {
	Kind Kind
	Time algebra.TimeFormat
	// Expanded writes a Table as one block of "name | value" lines per
	// tuple (the shell's \x), for tuples too wide for a line.
	Expanded bool
}

// Header is the column names of a relation's output: its attributes, then
// at (events) or from,to (intervals).
func Header(rel *algebra.Relation) []string {
	var h []string
	for _, a := range rel.Attrs {
		h = append(h, a.Name)
	}
	if rel.IsEvent() {
		return append(h, "at")
	}
	return append(h, "from", "to")
}

// Open is how a table writes the end of an interval still open (valid
// until forever); CSV leaves it empty, as history files do, and JSONL
// writes null.
const Open = "open"

// Row formats one tuple as strings, in Header's order; the end of an
// interval still open is written as open says.
func Row(rel *algebra.Relation, t *algebra.Tuple, tf algebra.TimeFormat, open string) []string {
	r := make([]string, 0, len(t.Vals)+2)
	for _, v := range t.Vals {
		r = append(r, v.Format(tf))
	}
	r = append(r, algebra.FormatTime(t.From, tf))
	if !rel.IsEvent() {
		r = append(r, endTime(t.To, tf, open))
	}
	return r
}

// endTime is an interval's end, open when it is forever.
func endTime(t algebra.Time, tf algebra.TimeFormat, open string) string {
	if t == algebra.Forever {
		return open
	}
	return algebra.FormatTime(t, tf)
}

// Write writes a table (rows as they are ordered) in the chosen format.
// JSONL rows carry the relation's name (none when it has none; see
// WriteResult).
func Write(w io.Writer, t *algebra.Table, o Options) error {
	return WriteResult(w, t, -1, o)
}

// RelName is the name a result relation goes by in output that mixes
// several: its own, or "result N" for the i'th retrieve (from 0) that
// named none ("" when i < 0).
func RelName(rel *algebra.Relation, i int) string {
	if rel.Name != "" || i < 0 {
		return rel.Name
	}
	return fmt.Sprintf("result %d", i+1)
}

// WriteResult is Write for the result of the i'th retrieve (from 0), whose
// JSONL rows carry RelName(t.Rel, i) as "relation".
func WriteResult(w io.Writer, t *algebra.Table, i int, o Options) error {
	if o.Kind == Table {
		return writeTable(w, t, o)
	}
	rw := &rowWriter{rel: t.Rel, tf: o.Time}
	var b []byte
	if o.Kind == CSV {
		b = rw.csvRecord(b, Header(t.Rel))
	}
	name := RelName(t.Rel, i)
	for j := range t.Rows {
		if o.Kind == CSV {
			b = rw.csvRow(b, "", &t.Rows[j])
		} else {
			b = rw.jsonRow(b, name, &t.Rows[j])
		}
		if len(b) >= 32<<10 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	_, err := w.Write(b)
	return err
}

func writeTable(w io.Writer, t *algebra.Table, o Options) error {
	rows := make([][]string, len(t.Rows))
	for i := range t.Rows {
		rows[i] = Row(t.Rel, &t.Rows[i], o.Time, Open)
	}
	if o.Expanded {
		return writeRecords(w, t.Rel.Name, Header(t.Rel), rows)
	}
	return writeGrid(w, t.Rel.Name, Header(t.Rel), rows, "tuple", numeric(t.Rel))
}

// numeric says which of Header's columns hold numbers (int, float), which
// a table aligns right so that their digits line up.
func numeric(rel *algebra.Relation) []bool {
	right := make([]bool, len(Header(rel)))
	for i, a := range rel.Attrs {
		right[i] = a.Type.Kind.IsNumeric()
	}
	return right
}

// writeRecords writes each row as a block of "column | value" lines, the
// columns padded to the widest name (psql's expanded display).
func writeRecords(w io.Writer, title string, head []string, rows [][]string) error {
	var b strings.Builder
	if title != "" {
		b.WriteString(title + "\n")
	}
	width := 0
	for _, h := range head {
		width = max(width, uniseg.StringWidth(h))
	}
	for i, r := range rows {
		fmt.Fprintf(&b, "-[ RECORD %d ]%s\n", i+1, strings.Repeat("-", width))
		for j, c := range r {
			fmt.Fprintf(&b, "%s%s | %s\n", head[j], strings.Repeat(" ", width-uniseg.StringWidth(head[j])), c)
		}
	}
	noun := "tuples"
	if len(rows) == 1 {
		noun = "tuple"
	}
	fmt.Fprintf(&b, "(%d %s)\n", len(rows), noun)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFacts writes rows that are not tuples of a historical relation —
// a catalog listing, a schema — in the chosen format, without valid-time
// columns: a table, CSV with a header, or one JSON object per row.
func WriteFacts(w io.Writer, head []string, rows [][]string, o Options) error {
	switch o.Kind {
	case CSV:
		cw := csv.NewWriter(w)
		cw.Write(head)
		cw.WriteAll(rows)
		return cw.Error()
	case JSONL:
		for _, r := range rows {
			m := make(map[string]string, len(head))
			for i, h := range head {
				if i < len(r) {
					m[h] = r[i]
				}
			}
			data, err := json.Marshal(m)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "%s\n", data); err != nil {
				return err
			}
		}
		return nil
	}
	return writeGrid(w, "", head, rows, "row", nil)
}

// writeGrid draws an aligned table with a count of its rows. Widths are
// display widths (uniseg: a CJK character takes two cells, a combining
// mark none), so columns line up on a terminal whatever the script;
// columns marked in right (numbers) align right, the others left.
func writeGrid(w io.Writer, title string, head []string, rows [][]string, unit string, right []bool) error {
	width := make([]int, len(head))
	for i, h := range head {
		width[i] = uniseg.StringWidth(h)
	}
	for _, r := range rows {
		for j, c := range r {
			width[j] = max(width[j], uniseg.StringWidth(c))
		}
	}
	var b strings.Builder
	if title != "" {
		b.WriteString(title + "\n")
	}
	line := func(cells []string, header bool) {
		for j, c := range cells {
			if j > 0 {
				b.WriteString(" | ")
			} else {
				b.WriteString(" ")
			}
			pad := strings.Repeat(" ", width[j]-uniseg.StringWidth(c))
			switch {
			case !header && j < len(right) && right[j]:
				b.WriteString(pad + c)
			case j < len(cells)-1:
				b.WriteString(c + pad)
			default:
				b.WriteString(c) // no trailing blanks
			}
		}
		b.WriteString("\n")
	}
	line(head, true)
	for j := range head {
		if j > 0 {
			b.WriteString("+")
		}
		b.WriteString(strings.Repeat("-", width[j]+2))
	}
	b.WriteString("\n")
	for _, r := range rows {
		line(r, false)
	}
	noun := unit + "s"
	if len(rows) == 1 {
		noun = unit
	}
	fmt.Fprintf(&b, "(%d %s)\n", len(rows), noun)
	_, err := io.WriteString(w, b.String())
	return err
}

// RelationKey is the JSONL key of a row's relation name; a relation with an
// attribute of that name has it under "_relation" instead, so no key
// repeats.
const RelationKey = "relation"

// relationKey is the JSONL key of rel's rows' relation name: RelationKey,
// or "_"+RelationKey when rel has an attribute of that name.
func relationKey(rel *algebra.Relation) string {
	if slices.ContainsFunc(rel.Attrs, func(a algebra.Attr) bool { return a.Name == RelationKey }) {
		return "_" + RelationKey
	}
	return RelationKey
}

// ParseOptions reads a format (table, csv or jsonl), a time format (auto,
// clock, rfc3339 or ns; "" is auto: RFC 3339 for wall-clock times, clock
// notation for a subject's own clock from zero) and a time zone for RFC
// 3339 (utc, the default, or local).
func ParseOptions(kind, timeFormat, tz string) (Options, error) {
	k, err := ParseKind(kind)
	if err != nil {
		return Options{}, err
	}
	if timeFormat == "" {
		timeFormat = "auto"
	}
	tf, err := algebra.ParseTimeFormat(timeFormat)
	if err == nil {
		tf, err = algebra.WithTZ(tf, tz)
	}
	if err != nil {
		return Options{}, err
	}
	return Options{Kind: k, Time: tf}, nil
}
