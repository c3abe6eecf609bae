package cli

import (
	"github.com/spf13/cobra"
)

// CompleteValues registers, on every command of c that has the flag, the
// fixed set of values each named flag takes, so that shell completion
// offers them (--format <TAB> → table csv jsonl). A flag of one name
// means the same thing in every command, as completeFileFlags assumes for
// paths.
func CompleteValues(c *cobra.Command, values map[string][]string) {
	for name, vals := range values {
		if c.Flags().Lookup(name) == nil {
			continue
		}
		vals := vals
		c.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return vals, cobra.ShellCompDirectiveNoFileComp
		})
	}
	for _, sub := range c.Commands() {
		CompleteValues(sub, values)
	}
}
