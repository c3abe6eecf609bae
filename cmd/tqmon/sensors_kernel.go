package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/resident/kernel"
)

func newSensorsListCmd(stdout io.Writer) *cobra.Command {
	var kern, programs bool
	var specs []string
	cmd := &cobra.Command{
		Use:     "list --kernel [--spec FILE]... [--programs]",
		Short:   "Show the kernel's sensor description",
		Long:    doc("sensors.list"),
		Example: doc("sensors.list.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !kern {
				return usageErr(errors.New("list shows the kernel's sensors: give --kernel (for a .sdl file, use sensors check)"))
			}
			srcs, err := kernel.ReadSources(specs)
			if err != nil {
				return usageErr(err)
			}
			if !programs && len(srcs) == 0 {
				fmt.Fprint(stdout, kernel.LinuxSDL())
				return nil
			}
			d, err := kernel.Describe(srcs)
			if err != nil {
				return usageErr(err)
			}
			if programs {
				fmt.Fprint(stdout, d.Spec.Listing())
			} else {
				fmt.Fprint(stdout, d.SDL)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&kern, "kernel", false, "the Linux kernel's sensors (built in)")
	cmd.Flags().StringArrayVar(&specs, "spec", nil, "FILE extending the kernel's description (repeatable)")
	cmd.Flags().BoolVar(&programs, "programs", false, "print the generated eBPF programs instead")
	return cmd
}
