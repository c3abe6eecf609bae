package tqmon

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// mdLink is a markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)

// TestDocsInRepo: nothing in the repository refers to documents outside
// it (the design notes it was built from, a sibling checkout), and every
// relative markdown link names a file that exists in the repository.
func TestDocsInRepo(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	outside := []string{"../shared", "/work/", "TQUEL.md", "SDL.md", "DESIGN.md", "PERF-NOTES.md"}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if name == ".git" || name == "node_modules" || name == "fuzz" {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".md", ".txt", ".sdl", ".tq", ".display", ".yml", ".yaml", ".sh":
		default:
			if name != "Makefile" {
				return nil
			}
		}
		if name == "docs_test.go" {
			return nil // the list above
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		text := string(data)
		for _, o := range outside {
			if i := strings.Index(text, o); i >= 0 {
				t.Errorf("%s:%d refers outside the repository: %q", rel, strings.Count(text[:i], "\n")+1, o)
			}
		}
		if filepath.Ext(name) != ".md" {
			return nil
		}
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			abs := filepath.Join(filepath.Dir(path), target)
			if r, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(r, "..") {
				t.Errorf("%s: link %s leaves the repository", rel, target)
			} else if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s: link %s: no such file", rel, target)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// citedTest is a test, benchmark or fuzz target's name as the user
// documentation cites it.
var citedTest = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*`)

// definedTest is the name of a test function (or a method named like one).
var definedTest = regexp.MustCompile(`(?m)^func (?:\([^)]*\) )?((?:Test|Benchmark|Fuzz)[A-Za-z0-9_]*)\(`)

// TestDocsCiteTestsThatExist: every test, benchmark or fuzz target that
// the README, docs/, the commands' help texts or a package's doc.go names
// is defined in some _test.go file of the repository — a renamed or
// removed test cannot stay cited as the proof of a bound. A name cited in
// a -bench pattern may be the prefix of the benchmarks it selects
// (BenchmarkSensor selects BenchmarkSensorDisabled, …), so a prefix of a
// defined name counts.
func TestDocsCiteTestsThatExist(t *testing.T) {
	defined := map[string]bool{}
	var docs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "node_modules" || n == "fuzz" {
				return filepath.SkipDir
			}
			return nil
		}
		switch name := d.Name(); {
		case strings.HasSuffix(name, "_test.go"):
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range definedTest.FindAllStringSubmatch(string(data), -1) {
				defined[m[1]] = true
			}
		case name == "doc.go", name == "README.md" && filepath.Dir(path) == ".",
			strings.HasPrefix(path, "docs"+string(filepath.Separator)) && filepath.Ext(name) == ".md",
			strings.HasPrefix(path, filepath.Join("cmd", "tqmon", "help")+string(filepath.Separator)):
			docs = append(docs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 5 || len(defined) < 100 {
		t.Fatalf("found %d documents and %d tests: the walk is wrong", len(docs), len(defined))
	}
	names := make([]string, 0, len(defined))
	for n := range defined {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, path := range docs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for _, loc := range citedTest.FindAllStringIndex(text, -1) {
			name := text[loc[0]:loc[1]]
			if defined[name] {
				continue
			}
			if i := sort.SearchStrings(names, name); i < len(names) && strings.HasPrefix(names[i], name) {
				continue
			}
			t.Errorf("%s:%d cites %s, which no _test.go defines", path, strings.Count(text[:loc[0]], "\n")+1, name)
		}
	}
}

// sectionRef is a reference to a section of a markdown page, in the forms
// the documentation uses: `"Heading" in docs/page.md`, `docs/page.md,
// "Heading"` and `the README's "Heading"`.
var sectionRef = regexp.MustCompile("\"([^\"]{3,60})\" in `?((?:docs/)?[a-z]+\\.md)|`?((?:docs/)?[a-z]+\\.md)`?\\)?, \"([^\"]{3,60})\"|the README's \"([^\"]{3,60})\"")

// TestDocsSectionsReferredToExist: a section that the README, docs/, the
// help texts or a doc.go sends the reader to is a heading of that page
// (its beginning), so moving or renaming a section cannot leave a
// reference to nothing.
func TestDocsSectionsReferredToExist(t *testing.T) {
	headings := func(page string) []string {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("%s: %v", page, err)
			return nil
		}
		var hs []string
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "#") {
				hs = append(hs, strings.TrimSpace(strings.TrimLeft(l, "#")))
			}
		}
		return hs
	}
	files, _ := filepath.Glob("docs/*.md")
	help, _ := filepath.Glob("cmd/tqmon/help/*.txt")
	files = append(append([]string{"README.md"}, files...), help...)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "doc.go" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	refs := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Line breaks and comment markers inside a reference are spaces.
		text := strings.Join(strings.Fields(strings.ReplaceAll(string(data), "\n//", "\n")), " ")
		for _, m := range sectionRef.FindAllStringSubmatch(text, -1) {
			page, heading := m[2], m[1]
			switch {
			case m[5] != "":
				page, heading = "README.md", m[5]
			case m[3] != "":
				page, heading = m[3], m[4]
			}
			if page != "README.md" && !strings.HasPrefix(page, "docs/") {
				page = "docs/" + page
			}
			refs++
			found := false
			for _, h := range headings(page) {
				if strings.HasPrefix(h, heading) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s refers to %q in %s: no such heading", f, heading, page)
			}
		}
	}
	if refs < 5 {
		t.Fatalf("found %d section references: the pattern is wrong", refs)
	}
}
