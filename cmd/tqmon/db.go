package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/tqmon/tqmon/store/db"
)

func newDBCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "db",
		Short: "Check a database, or copy what is intact of a damaged one",
		Long:  doc("db"),
	}
	cmd.AddCommand(newDBCheckCmd(stdout, stderr), newDBRepairCmd(stdout, stderr))
	return cmd
}

func newDBCheckCmd(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:     "check DB",
		Short:   "Verify every table, log and record of a database",
		Long:    doc("db.check"),
		Example: doc("db.check.example"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := db.Check(args[0], db.Options{Log: stderr})
			if err != nil {
				return usageErr(err)
			}
			if err := rep.Write(stdout); err != nil {
				return runtimeErr(err)
			}
			if !rep.OK() {
				return runtimeErr(fmt.Errorf("database %s is damaged (%d found): tqmon db repair %s --out NEW copies out what is intact",
					args[0], len(rep.Damage), args[0]))
			}
			return nil
		},
	}
}

func newDBRepairCmd(stdout, stderr io.Writer) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:     "repair DB --out NEW",
		Short:   "Copy everything intact of a damaged database into a new one",
		Long:    doc("db.repair"),
		Example: doc("db.repair.example"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErr(errors.New("db repair needs --out NEW: the database is never repaired in place"))
			}
			rep, err := db.Repair(args[0], out, db.Options{Log: stderr})
			if err != nil {
				return usageErr(err)
			}
			if err := rep.Write(stdout); err != nil {
				return runtimeErr(err)
			}
			lost := "nothing lost"
			if !rep.OK() {
				lost = "what is listed above is lost"
			}
			_, err = fmt.Fprintf(stdout, "copied what is intact into %s: %s\n", out, lost)
			return err
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the new database to copy into")
	return cmd
}
