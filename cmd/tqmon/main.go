// Command tqmon is the temporal relational monitor: sensors as historical
// relations, TQuel queries over them, only the sensors a query needs enabled.
package main

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	tqmonfiles "github.com/tqmon/tqmon"
	"github.com/tqmon/tqmon/internal/cli"
	"github.com/tqmon/tqmon/remote"
)

// Exit codes.
const (
	exitOK      = 0
	exitRuntime = 1 // the query ran and failed
	exitUsage   = 2 // bad flags, syntax or semantic errors, malformed inputs
	// exitIncomplete: a live answer or recording may be incomplete —
	// packets were lost, or a session was (lease expiry, a broken
	// stream) — unless --allow-loss.
	exitIncomplete = 3
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(err error) error   { return &exitError{code: exitUsage, err: err} }
func runtimeErr(err error) error { return &exitError{code: exitRuntime, err: err} }

// incomplete turns an incomplete live run's error (remote.ErrIncomplete)
// into exit status 3, or, with --allow-loss, into a warning on stderr;
// other errors are runtime errors.
func incomplete(err error, allowLoss bool, stderr io.Writer) error {
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, remote.ErrIncomplete):
		return runtimeErr(err)
	case allowLoss:
		fmt.Fprintf(stderr, "tqmon: %v (--allow-loss)\n", err)
		return nil
	}
	return &exitError{code: exitIncomplete, err: err}
}

// The commit this binary was built from, its time and whether the work
// tree had changes, as the Makefile's build stamps them with -ldflags -X
// (LDFLAGS there), for --version when the build carries no VCS
// information (-buildvcs=false). Set only by the linker, never written.
var stampCommit, stampTime, stampModified string

func main() {
	// The examples of --help and the README name testdata/ paths; an
	// installed binary run away from the source tree uses its embedded copy.
	args, err := tqmonfiles.ExampleArgs(os.Args[1:], tqmonfiles.ExampleDir())
	if err != nil {
		fmt.Fprintf(os.Stderr, "tqmon: the built-in examples: %v\n", err)
		args = os.Args[1:]
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

// run executes tqmon with arguments and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	code := exitUsage // cobra's own errors are flag and usage errors
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	}
	printError(stderr, err)
	return code
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "tqmon",
		Short:         "A temporal relational monitor: ask TQuel questions of a system's history",
		Long:          doc("main"),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true // ours has examples
	info, ok := debug.ReadBuildInfo()
	root.Version = cli.Version(info, ok, cli.Stamp{Commit: stampCommit, Time: stampTime, Modified: stampModified})
	root.SetVersionTemplate("tqmon {{.Version}}")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newQueryCmd(stdout, stderr), newSensorsCmd(stdout, stderr), newDemoCmd(stdout, stderr),
		newShellCmd(stdout, stderr), newViewCmd(stdout, stderr), newRecordCmd(stdout, stderr),
		newReplayCmd(stdout, stderr), newExportCmd(stdout, stderr), newImportCmd(stdout, stderr),
		newDBCmd(stdout, stderr), newCompletionCmd(stdout), newResidentCmd(stdout, stderr), newServeCmd(stdout, stderr),
		newManCmd(stdout))
	completeFileFlags(root)
	cli.CompleteValues(root, flagValues())
	cli.SuggestFlags(root)
	return root
}

// help holds the commands' long help and examples, a file each.
//
//go:embed help/*.txt
var help embed.FS

// doc is the help text of the file help/NAME.txt.
func doc(name string) string {
	text, err := help.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(err) // the files are embedded: a missing one is a build error
	}
	return strings.TrimSuffix(string(text), "\n")
}

func printError(w io.Writer, err error) {
	fmt.Fprint(w, renderError(err))
}
