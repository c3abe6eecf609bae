package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/internal/cli"
)

// newCompletionCmd replaces cobra's default completion command with one
// whose help shows how to install the scripts.
func newCompletionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:       "completion bash|zsh|fish|powershell",
		Short:     "Print a shell completion script",
		Long:      doc("completion"),
		Example:   doc("completion.example"),
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(stdout, true)
			case "zsh":
				return root.GenZshCompletion(stdout)
			case "fish":
				return root.GenFishCompletion(stdout, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(stdout)
			}
			return usageErr(fmt.Errorf("unknown shell %q: want bash, zsh, fish or powershell", args[0]))
		},
	}
}

// completeFileFlags tells shell completion which flags name files or
// directories, across every command: a flag of one name means the same
// thing everywhere.
func completeFileFlags(c *cobra.Command) {
	dirs := []string{"history", "db", "parquet", "truth", "out", "go-out", "record"}
	files := map[string][]string{"file": {"tq"}, "display": {"display"}}
	for _, name := range dirs {
		if c.Flags().Lookup(name) != nil {
			c.MarkFlagDirname(name)
		}
	}
	for name, exts := range files {
		if c.Flags().Lookup(name) != nil {
			c.MarkFlagFilename(name, exts...)
		}
	}
	for _, sub := range c.Commands() {
		completeFileFlags(sub)
	}
}

// flagValues are the fixed values of flags that take one of a few words,
// for shell completion (TestFlagValueCompletion checks that each parses).
func flagValues() map[string][]string {
	return map[string][]string{
		"format":      {"table", "csv", "jsonl"},
		"time-format": timeFormats(),
		"plan":        {"optimized", "naive"},
	}
}

// timeFormats lists the time formats algebra knows, by walking its
// enumeration until a value has no name: a format added there completes
// without a second list here.
func timeFormats() []string {
	var names []string
	for f := algebra.TimeFormat(0); f.String() != "?"; f++ {
		names = append(names, f.String())
	}
	return names
}

// newManCmd writes the man pages.
func newManCmd(stdout io.Writer) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "man --dir DIR",
		Short: "Write tqmon's man pages (one per command, section 1) into a directory",
		Long: "Write a man page for tqmon and each of its commands into DIR (created if needed), from the same\n" +
			"text as --help. Read one with man -l DIR/tqmon-query.1, or put DIR on MANPATH.",
		Example: doc("man.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usageErr(errors.New("man needs --dir DIR: where to write the pages"))
			}
			n, err := cli.Man(cmd.Root(), dir)
			if err != nil {
				return runtimeErr(err)
			}
			fmt.Fprintf(stdout, "wrote %d pages to %s (man -l %s reads one)\n", n, dir, filepath.Join(dir, "tqmon-query.1"))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to write the pages into")
	cmd.MarkFlagDirname("dir")
	return cmd
}
