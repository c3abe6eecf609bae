package testkit

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// A Query is one query of a corpus file.
type Query struct {
	Name string
	// Text is the query's lines, after as many blank lines as precede
	// them in the file, so positions in diagnostics are the file's.
	Text string
	// Rules are the rewrite rules a "-- rules: R1 R2" line says the
	// query exercises.
	Rules []string
	// EmptyOK is set by a "-- empty-ok" line: the query may give no
	// rows over every history tried.
	EmptyOK bool
}

// ReadCorpus reads a query corpus: each query starts after a
// "-- query: NAME" line and runs up to the next one (see
// testdata/differential/queries.tq).
func ReadCorpus(t testing.TB, path string) []Query {
	t.Helper()
	const header = "-- query: "
	var out []Query
	lines := strings.Split(ReadFile(t, path), "\n")
	for i, l := range lines {
		name, ok := strings.CutPrefix(l, header)
		if !ok {
			continue
		}
		q := Query{Name: strings.TrimSpace(name)}
		var b strings.Builder
		b.WriteString(strings.Repeat("\n", i+1))
		for j := i + 1; j < len(lines) && !strings.HasPrefix(lines[j], header); j++ {
			if r, ok := strings.CutPrefix(lines[j], "-- rules: "); ok {
				q.Rules = strings.Fields(r)
			}
			if strings.TrimSpace(lines[j]) == "-- empty-ok" {
				q.EmptyOK = true
			}
			b.WriteString(lines[j] + "\n")
		}
		q.Text = b.String()
		out = append(out, q)
	}
	return out
}

// Histories is how many random histories a differential test runs each
// query over: TQMON_DIFF_HISTORIES overrides it (make test-long runs
// thousands).
func Histories() int {
	if s := os.Getenv("TQMON_DIFF_HISTORIES"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	if testing.Short() {
		return 50
	}
	return 300
}
