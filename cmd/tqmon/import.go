package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/tqmon/tqmon/display/progress"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/history"
	"github.com/tqmon/tqmon/subject"
)

func newImportCmd(stdout, stderr io.Writer) *cobra.Command {
	var dir, dbDir string
	cmd := &cobra.Command{
		Use:     "import --history DIR --db DB",
		Short:   "Load a CSV history into a new database",
		Long:    doc("import"),
		Example: doc("import.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" || dbDir == "" {
				return usageErr(errors.New("import needs --history DIR and --db DB"))
			}
			h, err := history.Load(dir)
			if err != nil {
				return usageErr(err)
			}
			spec, err := subject.HistorySpec(dir)
			if err != nil {
				return usageErr(err)
			}
			d, err := db.Create(dbDir, spec)
			if err != nil {
				return usageErr(err)
			}
			bar := progress.New(stderr, progress.IsTerminal(stderr))
			err = d.Import(h, db.WriterOptions{}, func(done, total uint64) {
				bar.Update(float64(done)/float64(max(total, 1)), fmt.Sprintf("%d of %d tuples written", done, total), done == total)
			})
			bar.Done()
			if cerr := d.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return runtimeErr(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "history", "", "the history directory to load")
	cmd.Flags().StringVar(&dbDir, "db", "", "the database to create (a new or empty directory)")
	return cmd
}
