package testkit

import (
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/grammar/tquel"
	"github.com/tqmon/tqmon/sensor"
)

// CompileSpec parses and compiles a sensor description given as text; name
// is its file name, in the catalog and in diagnostics.
func CompileSpec(t testing.TB, name, text string) *algebra.Catalog {
	t.Helper()
	f, err := sdl.Parse(name, text)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	cat, err := sensor.Compile(f)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	return cat
}

// LoadCatalog compiles the sensor description in the file at path.
func LoadCatalog(t testing.TB, path string) *algebra.Catalog {
	t.Helper()
	return CompileSpec(t, path, ReadFile(t, path))
}

// PaperCatalog is the catalog of the paper's example system,
// testdata/paper/os.sdl; positions in it name the file "os.sdl".
func PaperCatalog(t testing.TB) *algebra.Catalog {
	t.Helper()
	return CompileSpec(t, "os.sdl", ReadFile(t, filepath.Join(Root(t), "testdata", "paper", "os.sdl")))
}

// Compile parses and checks the queries in text (file name) against cat,
// with now as the time "now" stands for.
func Compile(t testing.TB, cat *algebra.Catalog, name, text string, now algebra.Time) []*check.Retrieve {
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
