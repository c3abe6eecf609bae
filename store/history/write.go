package history

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/tqmon/tqmon/algebra"
)

// Write writes a history directory: the sensor description (spec, written
// as <specName>), one <Relation>.csv per relation of h's catalog and, if h
// has an observation window, observation.csv; Load reads it back. Times are written as integer nanoseconds; open
// intervals have an empty to.
func Write(dir string, h *algebra.History, spec, specName string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, specName), []byte(spec), 0o644); err != nil {
		return err
	}
	if w := h.Window; w != nil {
		text := fmt.Sprintf("from,to\n%s,%s\n", timeField(w.From), timeField(w.To))
		if err := os.WriteFile(filepath.Join(dir, "observation.csv"), []byte(text), 0o644); err != nil {
			return err
		}
	}
	for _, r := range append(slices.Clone(h.Catalog.Relations), h.Catalog.Builtins()...) {
		t := h.Table(r.Name)
		if t == nil || r.Builtin && len(t.Rows) == 0 {
			continue // the observation's relations only when they hold something
		}
		sorted := &algebra.Table{Rel: t.Rel, Rows: append([]algebra.Tuple(nil), t.Rows...)}
		sorted.SortRows()
		if err := writeCSV(filepath.Join(dir, r.Name+".csv"), sorted); err != nil {
			return err
		}
	}
	return nil
}

func writeCSV(path string, t *algebra.Table) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	var head []string
	for _, a := range t.Rel.Attrs {
		head = append(head, a.Name)
	}
	if t.Rel.IsEvent() {
		head = append(head, "at")
	} else {
		head = append(head, "from", "to")
	}
	_ = w.Write(head)
	for _, row := range t.Rows {
		var rec []string
		for _, v := range row.Vals {
			rec = append(rec, v.Format(algebra.TimeNS))
		}
		rec = append(rec, timeField(row.From))
		if !t.Rel.IsEvent() {
			if row.To == algebra.Forever {
				rec = append(rec, "")
			} else {
				rec = append(rec, timeField(row.To))
			}
		}
		_ = w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

func timeField(t algebra.Time) string { return algebra.FormatTime(t, algebra.TimeNS) }
