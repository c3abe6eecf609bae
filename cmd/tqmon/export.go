package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/tqmon/tqmon/display/progress"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/history"
)

func newExportCmd(stdout, stderr io.Writer) *cobra.Command {
	var dbDir, out string
	cmd := &cobra.Command{
		Use:     "export --db DB --out DIR",
		Short:   "Write a database's relations as a CSV history",
		Long:    doc("export"),
		Example: doc("export.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dbDir == "" || out == "" {
				return usageErr(errors.New("export needs --db DB and --out DIR"))
			}
			if ents, err := os.ReadDir(out); err == nil && len(ents) > 0 {
				return usageErr(fmt.Errorf("%s is not empty: export into a new or empty directory", out))
			}
			d, err := db.Open(dbDir, db.Options{ReadOnly: true})
			if err != nil {
				return usageErr(err)
			}
			defer d.Close()
			bar := progress.New(stderr, progress.IsTerminal(stderr))
			defer bar.Done()
			h, err := d.History(func(done, total uint64) {
				bar.Update(float64(done)/float64(max(total, 1)), fmt.Sprintf("%d of %d elements read", done, total), done == total)
			})
			if err != nil {
				return runtimeErr(err)
			}
			spec := d.Spec()
			if err := history.Write(out, h, spec.Text, filepath.Base(spec.Name)); err != nil {
				return runtimeErr(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dbDir, "db", "", "the database to export")
	cmd.Flags().StringVar(&out, "out", "", "the history directory to write (new or empty)")
	return cmd
}
