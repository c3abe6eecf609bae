package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/store/history"
)

// genVersion names the generator's output; a change to the system's shape
// below must change it, so that cached histories are made again.
const genVersion = "paper-v1"

// paperSystem is the shape of the generated system: tqmon demo's defaults.
func paperSystem(sends int) histgen.PaperConfig {
	return histgen.PaperConfig{Seed: 1, Processors: 3, Processes: 8, Mailboxes: 8, Sends: sends, Fanout: 2}
}

// pilotSends is the length of the pilot run that measures tuples per send.
const pilotSends = 1000

// generated is a history directory and the tuples it holds.
type generated struct {
	dir    string
	tuples int
}

// ensureHistory returns a history of about size tuples under root, made by
// histgen (and kept: the directory's done file records its tuple count).
func ensureHistory(root, specPath string, size int) (generated, error) {
	dir := filepath.Join(root, fmt.Sprintf("%s-%d", genVersion, size))
	done := filepath.Join(dir, "done")
	if b, err := os.ReadFile(done); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return generated{dir, n}, nil
		}
	}
	spec, err := os.ReadFile(specPath)
	if err != nil {
		return generated{}, err
	}
	cat, err := history.LoadSpec(specPath)
	if err != nil {
		return generated{}, err
	}
	pilot, err := histgen.Paper(cat, paperSystem(pilotSends))
	if err != nil {
		return generated{}, err
	}
	sends := max(1, int(int64(size)*pilotSends/int64(tuples(pilot))))
	h, err := histgen.Paper(cat, paperSystem(sends))
	if err != nil {
		return generated{}, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return generated{}, err
	}
	if err := history.Write(dir, h, string(spec), filepath.Base(specPath)); err != nil {
		return generated{}, err
	}
	n := tuples(h)
	if err := os.WriteFile(done, []byte(strconv.Itoa(n)+"\n"), 0o644); err != nil {
		return generated{}, err
	}
	return generated{dir, n}, nil
}

func tuples(h *algebra.History) int {
	n := 0
	for _, t := range h.Tables {
		n += len(t.Rows)
	}
	return n
}

// viewsSQL declares, for DuckDB, a view per relation of the history's
// catalog over its CSV file, with the catalog's types; an open interval's
// empty "to" reads as forever (the largest BIGINT), so the queries compare
// times without special cases.
func viewsSQL(h generated, cat *algebra.Catalog) string {
	var b strings.Builder
	for _, r := range cat.Relations {
		path := filepath.Join(h.dir, r.Name+".csv")
		if _, err := os.Stat(path); err != nil {
			continue
		}
		var cols, sel []string
		for _, a := range r.Attrs {
			cols = append(cols, fmt.Sprintf("%s: '%s'", sqlString(a.Name), sqlType(a.Type.Kind)))
			sel = append(sel, sqlIdent(a.Name))
		}
		if r.IsEvent() {
			cols = append(cols, `'at': 'BIGINT'`)
			sel = append(sel, `"at"`)
		} else {
			cols = append(cols, `'from': 'BIGINT'`, `'to': 'BIGINT'`)
			sel = append(sel, `"from"`, `coalesce("to", 9223372036854775807) AS "to"`)
		}
		fmt.Fprintf(&b, "CREATE VIEW %s AS SELECT %s FROM read_csv(%s, header = true, auto_detect = false, columns = {%s});\n",
			sqlIdent(r.Name), strings.Join(sel, ", "), sqlString(path), strings.Join(cols, ", "))
	}
	return b.String()
}

func sqlType(k algebra.Kind) string {
	switch k {
	case algebra.KindInt, algebra.KindTime, algebra.KindDuration:
		return "BIGINT"
	case algebra.KindFloat:
		return "DOUBLE"
	case algebra.KindBool:
		return "BOOLEAN"
	}
	return "VARCHAR" // entities, enumerations, strings
}

func sqlIdent(s string) string  { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func sqlString(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }
