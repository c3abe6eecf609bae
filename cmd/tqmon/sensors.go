package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/tqmon/tqmon/sensor/gogen"
	"github.com/tqmon/tqmon/store/history"
)

func newSensorsCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sensors",
		Short: "Check sensor descriptions and generate sensor code",
		Long:  doc("sensors"),
	}
	cmd.AddCommand(newSensorsCheckCmd(stdout), newSensorsCompileCmd(stdout), newSensorsListCmd(stdout))
	return cmd
}

func newSensorsCheckCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:     "check SPEC.sdl",
		Short:   "Check a sensor description and list its relations",
		Long:    doc("sensors.check"),
		Example: `  tqmon sensors check testdata/paper/os.sdl`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := history.LoadSpec(args[0])
			if err != nil {
				return usageErr(err)
			}
			if err := gogen.Check(cat); err != nil {
				return usageErr(err)
			}
			for _, r := range cat.Relations {
				variant := r.Strategy.Variant()
				if variant == "" {
					variant = "-"
				}
				fmt.Fprintf(stdout, "%-4s %s\n", variant, r.Signature())
			}
			return nil
		},
	}
}

func newSensorsCompileCmd(stdout io.Writer) *cobra.Command {
	var out, pkg string
	cmd := &cobra.Command{
		Use:     "compile SPEC.sdl --go-out DIR --go-package NAME",
		Short:   "Generate the Go sensors of a sensor description",
		Long:    doc("sensors.compile"),
		Example: `  tqmon sensors compile testdata/paper/os.sdl --go-out ./ossensors --go-package ossensors`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" || pkg == "" {
				return usageErr(errors.New("compile needs --go-out DIR and --go-package NAME"))
			}
			text, err := os.ReadFile(args[0])
			if err != nil {
				return usageErr(err)
			}
			cat, err := history.LoadSpec(args[0])
			if err != nil {
				return usageErr(err)
			}
			src, err := gogen.Generate(cat, string(text), pkg)
			if err != nil {
				return usageErr(err)
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return runtimeErr(err)
			}
			path := filepath.Join(out, pkg+".go")
			if err := os.WriteFile(path, src, 0o644); err != nil {
				return runtimeErr(err)
			}
			fmt.Fprintf(stdout, "wrote %s\n", path)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "go-out", "", "directory to write the generated package to")
	cmd.Flags().StringVar(&pkg, "go-package", "", "name of the generated Go package")
	return cmd
}
