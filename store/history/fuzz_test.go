package history

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tqmon/tqmon/grammar/source"
)

// maxFuzzFile is the longest file FuzzLoadHistoryDir writes; longer inputs
// are skipped. Go's fuzzer minimizes every input that finds new coverage,
// in time quadratic in its length (here each try parses a spec), and
// fuzzes nothing meanwhile. A spec of two relations and a header with a few
// rows fit; FuzzReadCSV reads longer files.
const maxFuzzFile = 128

// FuzzLoadHistoryDir: Load of a history directory whose sensor description
// (h.sdl) and relation files (P.csv, and E.csv unless its bytes are empty)
// come from the fuzzer never panics or hangs; every diagnostic about one of
// those files points inside it; on success every table validates.
//
// The directory is made once per fuzzing process, and an input rewrites
// only the files that differ from the previous input's.
func FuzzLoadHistoryDir(f *testing.F) {
	const spec = "entity type P\nentity relation P(P: P, S: enum(A, B))\nevent relation E(P: P, N: int)\n"
	f.Add(spec, []byte("P,S,from,to\np1,A,1,5\np1,B,5,\n"), []byte("P,N,at\np1,3,2\n"))
	f.Add(spec, []byte("P,S,from,to\np1,A,1,5\n"), []byte(nil))
	f.Add(spec, []byte("S,P,to,from\np1,A,5,1\n"), []byte("N,at\n"))
	f.Add("entity type P\ninterval relation P(P: P performer) sampled on performer\nevent relation E(N: float, T: time, D: duration)\n",
		[]byte("P,from,to\np,beginning,forever\n"), []byte("N,T,D,at\n1.5,0:00:01,1s,-3\n"))
	f.Add("entity type P\nentity relation X(P: P)\n", []byte("P,from,to\np,1,2\n"), []byte("not a history\n"))
	dir := f.TempDir()
	specPath, pPath, ePath := filepath.Join(dir, "h.sdl"), filepath.Join(dir, "P.csv"), filepath.Join(dir, "E.csv")
	written := map[string][]byte{} // what each file holds; absent: no file
	put := func(t *testing.T, path string, data []byte) {
		if old, ok := written[path]; ok && bytes.Equal(old, data) {
			return
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		written[path] = bytes.Clone(data)
	}
	f.Fuzz(func(t *testing.T, spec string, p, e []byte) {
		if len(spec) > maxFuzzFile || len(p) > maxFuzzFile || len(e) > maxFuzzFile {
			return
		}
		put(t, specPath, []byte(spec))
		put(t, pPath, p)
		if len(e) > 0 {
			put(t, ePath, e)
		} else if _, ok := written[ePath]; ok {
			if err := os.Remove(ePath); err != nil {
				t.Fatal(err)
			}
			delete(written, ePath)
		}
		h, err := Load(dir)
		if err != nil {
			for _, d := range source.Diagnostics(err) {
				text, ok := written[d.File]
				if !ok || !d.Pos.IsValid() {
					continue
				}
				lines := strings.Split(string(text), "\n")
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
