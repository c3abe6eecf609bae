package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tqmon/tqmon/grammar/source"
)

// maxFuzzCSV is the longest file a fuzz target reads. Go's fuzzer minimizes
// every input that finds new coverage, in time quadratic in its length, and
// fuzzes nothing meanwhile; a header and a few rows (or the 21 bad rows that
// reach maxErrors) fit.
const maxFuzzCSV = 256

// FuzzLoadHistoryDir: Load of a history directory whose sensor description
// (h.sdl) and relation files (P.csv, and E.csv unless its bytes are empty)
// come from the fuzzer never panics or hangs; every diagnostic about one of
// those files points inside it; on success every table validates. Files
// longer than maxFuzzCSV are skipped.
//
// The directory is made once per fuzzing process and rewritten for each
// input: a temporary directory per input would cost more than Load.
func FuzzLoadHistoryDir(f *testing.F) {
	const spec = "entity type P\nentity relation P(P: P, S: enum(A, B))\nevent relation E(P: P, N: int)\n"
	f.Add(spec, []byte("P,S,from,to\np1,A,1,5\np1,B,5,\n"), []byte("P,N,at\np1,3,2\n"))
	f.Add(spec, []byte("P,S,from,to\np1,A,1,5\n"), []byte(nil))
	f.Add(spec, []byte("S,P,to,from\np1,A,5,1\n"), []byte("N,at\n"))
	f.Add("entity type P\ninterval relation P(P: P performer) sampled on performer\nevent relation E(N: float, T: time, D: duration)\n",
		[]byte("P,from,to\np,beginning,forever\n"), []byte("N,T,D,at\n1.5,0:00:01,1s,-3\n"))
	f.Add("entity type P\nentity relation X(P: P)\n", []byte("P,from,to\np,1,2\n"), []byte("not a history\n"))
	dir := f.TempDir()
	paths := map[string]string{"h.sdl": "", "P.csv": "", "E.csv": ""}
	for name := range paths {
		paths[name] = filepath.Join(dir, name)
	}
	f.Fuzz(func(t *testing.T, spec string, p, e []byte) {
		if len(spec) > maxFuzzCSV || len(p) > maxFuzzCSV || len(e) > maxFuzzCSV {
			return
		}
		texts := map[string]string{paths["h.sdl"]: spec, paths["P.csv"]: string(p)}
		if len(e) > 0 {
			texts[paths["E.csv"]] = string(e)
		} else if err := os.Remove(paths["E.csv"]); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for path, text := range texts {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		h, err := Load(dir)
		if err != nil {
			for _, d := range source.Diagnostics(err) {
				text, ok := texts[d.File]
				if !ok || !d.Pos.IsValid() {
					continue
				}
				lines := strings.Split(text, "\n")
				if d.Pos.Line > len(lines) || d.Pos.Col < 1 || d.Pos.Col > utf8.RuneCountInString(lines[d.Pos.Line-1])+1 {
					t.Fatalf("diagnostic outside %s: %v", filepath.Base(d.File), d)
				}
			}
			return
		}
		for name, tab := range h.Tables {
			if tab.Rel != h.Catalog.Lookup(name) {
				t.Fatalf("table %s is not the catalog's relation %s", name, name)
			}
			if err := tab.Validate(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
