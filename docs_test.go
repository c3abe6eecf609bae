package tqmon

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
