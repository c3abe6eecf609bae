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
		Use:   "list --kernel [--spec FILE]... [--programs]",
		Short: "Show the kernel's sensor description",
		Long: `Show the sensor description of this machine's Linux kernel (linux.sdl,
built into tqmon): its entity relations, its relations and the sensor
bindings saying where each is collected. --spec files extend it (uprobe
sensors of your programs) and are checked against the kernel's types
(BTF) and the executables they name. --programs prints, instead, the
eBPF programs generated for it, instruction by instruction, with the
spec lines they come from (no root needed: nothing is loaded).`,
		Example: `  tqmon sensors list --kernel

  # Your own bindings (see README: the Linux kernel as a subject), with the
  # eBPF programs they compile to
  tqmon sensors list --kernel --spec calls.sdl --programs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !kern {
				return usageErr(errors.New("list shows the kernel's sensors: give --kernel (for a .sdl file, use sensors check)"))
			}
			srcs, err := readKernelSpecs(specs)
			if err != nil {
				return err
			}
			if !programs && len(srcs) == 0 {
				fmt.Fprint(stdout, kernel.LinuxSDL)
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
