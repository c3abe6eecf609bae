package testkit

import (
	"fmt"
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
