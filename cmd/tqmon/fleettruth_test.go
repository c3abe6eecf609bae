package main

import (
	"cmp"
	"encoding/csv"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/store/history"
)

// fleetTruth writes, under dir, the ground truth of a fleet whose hosts'
// truths are truths (host name → a demo's --truth directory), as the
// fleet's monitor sees it: the union of the hosts' descriptions with a
// Host attribute on every relation (remote.FleetCatalog), every entity
// identifier host-qualified (HOST/ID), every host's tuples, entity
// relations included (qualified, two hosts' P1 are two). The observation
// window is the latest host's.
func fleetTruth(t *testing.T, dir string, truths map[string]string) string {
	t.Helper()
	out := filepath.Join(dir, "fleet-truth")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	var hellos []*wire.Hello
	files := map[string][][]string{} // relation → rows, the header first
	var window []byte
	for host, tr := range truths {
		h, err := history.Open(tr)
		if err != nil {
			t.Fatal(err)
		}
		sdls, _ := filepath.Glob(filepath.Join(tr, "*.sdl"))
		if len(sdls) != 1 {
			t.Fatalf("%s: %d .sdl files", tr, len(sdls))
		}
		text, err := os.ReadFile(sdls[0])
		if err != nil {
			t.Fatal(err)
		}
		hellos = append(hellos, &wire.Hello{Name: host, SDL: string(text)})
		if data, err := os.ReadFile(filepath.Join(tr, "observation.csv")); err == nil {
			if window == nil || windowEnd(t, data) > windowEnd(t, window) {
				window = data
			}
		}
		for _, rel := range h.Catalog.Relations {
			f, err := os.Open(filepath.Join(tr, rel.Name+".csv"))
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			rows, err := csv.NewReader(f).ReadAll()
			f.Close()
			if err != nil || len(rows) == 0 {
				t.Fatalf("%s/%s.csv: %v", tr, rel.Name, err)
			}
			n := len(rel.Attrs)
			if files[rel.Name] == nil {
				files[rel.Name] = [][]string{insert(rows[0], n, algebra.HostAttr)}
			}
			for _, r := range rows[1:] {
				for i, a := range rel.Attrs {
					if a.Type.Kind == algebra.KindEntity && r[i] != "" {
						r[i] = algebra.QualifyEntity(host, r[i])
					}
				}
				files[rel.Name] = append(files[rel.Name], insert(r, n, host))
			}
		}
	}
	_, text, err := remote.FleetCatalog(hellos, true)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("fleet.sdl", []byte(text))
	if window != nil {
		write("observation.csv", window)
	}
	for rel, rows := range files {
		// The hosts' rows in time order (by begin): a history out of
		// order is run again once sorted, and a long one's rows printed
		// before that would not be the sorted run's first.
		at := slices.IndexFunc(rows[0], func(c string) bool { return c == "from" || c == "at" })
		if at >= 0 {
			slices.SortStableFunc(rows[1:], func(a, b []string) int {
				x, _ := strconv.ParseInt(a[at], 10, 64)
				y, _ := strconv.ParseInt(b[at], 10, 64)
				return cmp.Compare(x, y)
			})
		}
		var b strings.Builder
		w := csv.NewWriter(&b)
		w.WriteAll(rows)
		write(rel+".csv", []byte(b.String()))
	}
	return out
}

// insert is row with v inserted at i.
func insert(row []string, i int, v string) []string {
	out := append([]string(nil), row[:i]...)
	out = append(out, v)
	return append(out, row[i:]...)
}

// sameAsFleetTruth checks a fleet run's CSV output (times in ns; with
// several statements, each row led by its relation) against the queries
// (source flags src, -f FILE each) over the fleet's truth, run one by one.
func sameAsFleetTruth(t *testing.T, out, dir string, truths map[string]string, src ...string) {
	t.Helper()
	truth := fleetTruth(t, dir, truths)
	var want []string
	for i := 1; i < len(src); i += 2 {
		code, rows, stderr := tqmon(t, "query", "--history", truth, "-f", src[i], "--format", "csv", "--time-format", "ns")
		if code != 0 {
			t.Fatalf("query over the fleet's truth: %s", stderr)
		}
		text, _ := os.ReadFile(src[i])
		m := regexp.MustCompile(`retrieve\s+(\w+)`).FindSubmatch(text)
		if m == nil && len(src) > 2 {
			t.Fatalf("%s: no retrieve", src[i])
		}
		rs := sortedRows(rows)
		if len(rs) == 0 {
			t.Fatalf("%s: no result over the truths: the run was too short", src[i])
		}
		for _, r := range rs {
			if len(src) > 2 {
				r = string(m[1]) + "," + r
			}
			want = append(want, r)
		}
	}
	slices.Sort(want)
	var got []string
	for _, r := range sortedRows(out) {
		if !strings.HasPrefix(r, "relation,") { // each statement's header
			got = append(got, r)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("live rows (%d) differ from the fleet truth's (%d)\nonly live (%d):\n%s\nonly in the truth (%d):\n%s", len(got), len(want),
			len(minus(got, want)), head(minus(got, want)), len(minus(want, got)), head(minus(want, got)))
	}
}

// minus is the rows of a not in b.
func minus(a, b []string) []string {
	in := map[string]bool{}
	for _, r := range b {
		in[r] = true
	}
	var out []string
	for _, r := range a {
		if !in[r] {
			out = append(out, r)
		}
	}
	return out
}

// head is the first rows of rows, for a failure's message.
func head(rows []string) string {
	return strings.Join(rows[:min(len(rows), 8)], "\n")
}
