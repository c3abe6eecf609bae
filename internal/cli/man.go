package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Man writes a man page per command of root (section 1) into dir, which
// it creates if needed; it never writes anywhere else. The pages carry
// the commands' long help and examples, the same text as --help. It
// returns how many pages it wrote.
func Man(root *cobra.Command, dir string) (int, error) {
	if dir == "" {
		return 0, errors.New("man: no directory given")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	root.DisableAutoGenTag = true // pages that do not change with the day they were built
	hdr := &doc.GenManHeader{Title: strings.ToUpper(root.Name()), Section: "1", Source: root.Name(), Manual: root.Name() + " manual"}
	if err := doc.GenManTree(root, hdr, dir); err != nil {
		return 0, err
	}
	pages, err := filepath.Glob(filepath.Join(dir, root.Name()+"*.1"))
	return len(pages), err
}
