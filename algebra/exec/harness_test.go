package exec_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/grammar/tquel"
	"github.com/tqmon/tqmon/sensor"
)

// repoRoot finds the repository root from the package directory.
func repoRoot(t testing.TB) string {
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

func loadCatalog(t testing.TB, path string) *algebra.Catalog {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := sdl.Parse(path, string(text))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := sensor.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func compile(t testing.TB, cat *algebra.Catalog, name, text string, now algebra.Time) []*check.Retrieve {
	t.Helper()
	f, err := tquel.Parse(name, text)
	if err != nil {
		t.Fatalf("%s: parse: %v", name, err)
	}
	stmts, err := check.NewSession(cat, check.Options{Now: now}).Check(f)
	if err != nil {
		t.Fatalf("%s: check: %v", name, err)
	}
	return stmts
}

// interpret runs statements through the incremental interpreter.
func interpret(cat *algebra.Catalog, h *algebra.History, stmts []*check.Retrieve, opts exec.Options) ([]*algebra.Table, *exec.Network, error) {
	plans := make([]plan.Node, len(stmts))
	for i, s := range stmts {
		plans[i] = plan.Translate(s)
	}
	net, err := exec.Build(cat, stmts, plans, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := net.RunHistory(h); err != nil {
		return nil, net, err
	}
	out := make([]*algebra.Table, len(net.Stmts))
	for i, s := range net.Stmts {
		if !s.Result.Done {
			return nil, net, fmt.Errorf("statement %d: result stream not finished", i)
		}
		out[i] = s.Result.Table()
	}
	return out, net, nil
}

// render prints a table as CSV with ns times, the form expected files use.
func render(t *algebra.Table) string {
	var b strings.Builder
	var head []string
	for _, a := range t.Rel.Attrs {
		head = append(head, a.Name)
	}
	if t.Rel.IsEvent() {
		head = append(head, "at")
	} else {
		head = append(head, "from", "to")
	}
	b.WriteString(strings.Join(head, ",") + "\n")
	for _, row := range t.Rows {
		var cells []string
		for _, v := range row.Vals {
			cells = append(cells, v.Format(algebra.TimeNS))
		}
		cells = append(cells, algebra.FormatTime(row.From, algebra.TimeNS))
		if !t.Rel.IsEvent() {
			cells = append(cells, algebra.FormatTime(row.To, algebra.TimeNS))
		}
		b.WriteString(strings.Join(cells, ",") + "\n")
	}
	return b.String()
}

// dumpHistory prints a history compactly, for failure reports.
func dumpHistory(h *algebra.History) string {
	var b strings.Builder
	for _, r := range h.Catalog.Relations {
		t := h.Table(r.Name)
		fmt.Fprintf(&b, "%s:\n", r.Name)
		for _, row := range t.Rows {
			var vals []string
			for _, v := range row.Vals {
				vals = append(vals, v.Format(algebra.TimeNS))
			}
			if r.IsEvent() {
				fmt.Fprintf(&b, "  (%s) @%s\n", strings.Join(vals, ", "), algebra.FormatTime(row.From, algebra.TimeNS))
			} else {
				fmt.Fprintf(&b, "  (%s) [%s, %s)\n", strings.Join(vals, ", "), algebra.FormatTime(row.From, algebra.TimeNS), algebra.FormatTime(row.To, algebra.TimeNS))
			}
		}
	}
	return b.String()
}

// corpusQuery is one query of a corpus file.
type corpusQuery struct {
	Name string
	Text string
}

// readCorpus splits a corpus file at "-- query: NAME" lines.
func readCorpus(t testing.TB, path string) []corpusQuery {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusQuery
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		name, ok := strings.CutPrefix(l, "-- query: ")
		if !ok {
			continue
		}
		// Keep line numbers: blank out what precedes the query.
		var b strings.Builder
		for j := 0; j <= i; j++ {
			b.WriteString("\n")
		}
		for j := i + 1; j < len(lines); j++ {
			if strings.HasPrefix(lines[j], "-- query: ") {
				break
			}
			b.WriteString(lines[j] + "\n")
		}
		out = append(out, corpusQuery{Name: strings.TrimSpace(name), Text: b.String()})
	}
	return out
}
