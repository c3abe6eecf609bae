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

func newImportCmd(stdout, stderr io.Writer) *cobra.Command {
	var dir, dbDir string
	cmd := &cobra.Command{
		Use:   "import --history DIR --db DB",
		Short: "Load a CSV history into a new database",
		Long: `Load a history directory (one sensor description and one CSV file per
relation, see SDL.md) into a new database, which tqmon query --db and tqmon
replay read. Every tuple is checked as tqmon query --history checks it;
errors name the file, line and column. On a terminal, a progress bar shows
on stderr.`,
		Example: `  tqmon import --history testdata/paper --db /tmp/paper.db
  tqmon query --db /tmp/paper.db -f testdata/paper/resumed_by_p1.tq`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" || dbDir == "" {
				return usageErr(errors.New("import needs --history DIR and --db DB"))
			}
			h, err := history.Load(dir)
			if err != nil {
				return usageErr(err)
			}
			spec, err := historySpec(dir)
			if err != nil {
				return usageErr(err)
			}
			d, err := db.Create(dbDir, spec)
			if err != nil {
				return usageErr(err)
			}
			bar := progress.New(stderr, isTerminal(stderr))
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

// historySpec reads the sensor description of a history directory (which
// history.Load has checked has exactly one).
func historySpec(dir string) (db.Spec, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.sdl"))
	if err != nil || len(matches) != 1 {
		return db.Spec{}, fmt.Errorf("history %s: want exactly one .sdl file", dir)
	}
	text, err := os.ReadFile(matches[0])
	if err != nil {
		return db.Spec{}, err
	}
	return db.Spec{Name: filepath.Base(matches[0]), Text: string(text)}, nil
}
