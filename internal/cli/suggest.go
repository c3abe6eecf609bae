package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tqmon/tqmon/grammar/source"
)

// SuggestFlags makes every command of root answer an unknown flag with the
// closest one it has: the one flag whose name the typed name begins
// (--hist → --history), else the closest by edit distance (source.Closest,
// the rule TQuel's own did-you-mean uses). No suggestion when nothing is
// close; the error stays cobra's otherwise.
func SuggestFlags(root *cobra.Command) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		name, ok := unknownFlag(err.Error())
		if !ok {
			return err
		}
		if best, ok := closestFlag(name, flagNames(cmd)); ok {
			return fmt.Errorf("%w (did you mean --%s?)", err, best)
		}
		return err
	})
}

// unknownFlag extracts the long flag name from pflag's "unknown flag: --x"
// (shorthand errors, "unknown shorthand flag", have one letter and no
// useful suggestion).
func unknownFlag(msg string) (string, bool) {
	const prefix = "unknown flag: --"
	if !strings.HasPrefix(msg, prefix) {
		return "", false
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(msg, prefix), "=")
	return name, name != ""
}

// closestFlag is the unique flag name that name begins, else the closest
// by edit distance.
func closestFlag(name string, names []string) (string, bool) {
	var prefixed []string
	for _, n := range names {
		if strings.HasPrefix(n, name) {
			prefixed = append(prefixed, n)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0], true
	}
	return source.Closest(name, names)
}

// flagNames lists the long flags cmd accepts, its own and inherited,
// sorted so that ties resolve the same way every run.
func flagNames(cmd *cobra.Command) []string {
	var names []string
	add := func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	}
	cmd.LocalFlags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	sort.Strings(names)
	return names
}
