// Package tqmon holds what the tqmon binary carries of the repository
// besides code: the example histories, queries and display specs its
// --help and README use (testdata/paper, testdata/kernel), so that an
// installed binary (go install …/cmd/tqmon@…) runs its examples as
// written from any directory, without the source tree.
package tqmon

import (
	"bytes"
	"embed"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// examples are the example files, under their repository paths.
//
//go:embed testdata/paper testdata/kernel testdata/fleet
var examples embed.FS

// exampleRoot is the prefix of every path the examples answer for.
const exampleRoot = "testdata/"

// ExampleArgs returns args with every argument naming an example file or
// directory — a relative path under testdata/ that the embedded examples
// hold and the working directory does not — replaced by the path of a
// copy extracted under dir (made if needed; files already there with the
// same content are left alone, so repeated runs write nothing). Both
// "--flag PATH" and "--flag=PATH" forms are recognised. Paths that exist
// on disk win: in the repository, its own testdata is used. Anything else
// passes through unchanged, and so does everything after "--".
func ExampleArgs(args []string, dir string) ([]string, error) {
	out := slices.Clone(args)
	for i, a := range args {
		if a == "--" {
			break // a command's own arguments (-c -- CMD ARGS...)
		}
		prefix, p := "", a
		if strings.HasPrefix(a, "-") {
			name, val, ok := strings.Cut(a, "=")
			if !ok {
				continue
			}
			prefix, p = name+"=", val
		}
		if !isExample(p) {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			continue
		}
		clean := path.Clean(filepath.ToSlash(p))
		if err := extract(clean, dir); err != nil {
			return nil, err
		}
		out[i] = prefix + filepath.Join(dir, filepath.FromSlash(clean))
	}
	return out, nil
}

// isExample says whether p names an embedded file or directory.
func isExample(p string) bool {
	clean := path.Clean(filepath.ToSlash(p))
	if !strings.HasPrefix(clean, exampleRoot) {
		return false
	}
	_, err := fs.Stat(examples, clean)
	return err == nil
}

// extract copies the embedded file or tree at p under dir. A history
// directory's files are extracted with it (its .sdl and CSVs); a single
// file is extracted alone.
func extract(p, dir string) error {
	return fs.WalkDir(examples, p, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := examples.ReadFile(name)
		if err != nil {
			return err
		}
		if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, data) {
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
}

// ExampleDir is where ExampleArgs extracts examples for this user: under
// the user's cache directory (os.UserCacheDir), else the temporary one.
func ExampleDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "tqmon", "examples")
	}
	return filepath.Join(os.TempDir(), "tqmon-examples")
}
