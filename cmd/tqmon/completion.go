package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
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
	dirs := []string{"history", "db", "truth", "out", "go-out", "record"}
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
