package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/resident/kernel/launch"
)

// newShimCmd is the hidden command launch.Start runs: it waits for the
// monitor's release, then executes the command in place (same pid).
func newShimCmd(stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:                launch.ShimCommand + " PATH ARGV...",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			err := launch.Shim(args)
			fmt.Fprintf(stderr, "tqmon: %v\n", err)
			os.Exit(launch.ExitCode(err))
			return nil
		},
	}
}
