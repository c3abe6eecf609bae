package testkit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/source"
)

// Rows prints a table's rows in order, one a line: the values, then from
// and to (for events too), comma-terminated, times in nanoseconds.
func Rows(t *algebra.Table) string {
	var b strings.Builder
	for _, row := range t.Rows {
		for _, v := range row.Vals {
			b.WriteString(v.Format(algebra.TimeNS) + ",")
		}
		fmt.Fprintf(&b, "%s,%s\n", algebra.FormatTime(row.From, algebra.TimeNS), algebra.FormatTime(row.To, algebra.TimeNS))
	}
	return b.String()
}

// DiagLines prints the diagnostics err carries, one a line.
func DiagLines(err error) string {
	var lines []string
	for _, d := range source.Diagnostics(err) {
		lines = append(lines, d.Error())
	}
	return strings.Join(lines, "\n")
}

// History prints the named tables of a history, each its name, count and
// rows sorted (values, from, to in nanoseconds): two histories holding the
// same tuples print the same.
func History(h *algebra.History, names ...string) string {
	var b strings.Builder
	for _, name := range names {
		t := h.Table(name)
		rows := slices.Clone(t.Rows)
		(&algebra.Table{Rel: t.Rel, Rows: rows}).SortRows()
		fmt.Fprintf(&b, "%s: %d\n", name, len(rows))
		for _, row := range rows {
			fmt.Fprintf(&b, "%v %d %d\n", row.Vals, row.From, row.To)
		}
	}
	return b.String()
}
