package cli

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestVersion(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "c95dd67"}, {Key: "vcs.time", Value: "2026-11-28T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"}}}
	want := "v0.3.0\ncommit:   c95dd67\ntime:     2026-11-28T10:00:00Z\nmodified: true\ngo:       go1.26.8\n"
	if got := Version(info, true, Stamp{Commit: "older"}); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// A build without VCS stamps (go run, -buildvcs=false) keeps the shape.
	got := Version(&debug.BuildInfo{GoVersion: "go1.26.8"}, true, Stamp{})
	if !strings.Contains(got, "commit:   unknown\n") || !strings.HasPrefix(got, "unknown\n") {
		t.Errorf("unstamped build: %q", got)
	}
	// Without VCS information, the linker's stamp.
	got = Version(&debug.BuildInfo{GoVersion: "go1.26.8"}, true, Stamp{Commit: "c95dd67", Time: "2026-11-28T10:00:00Z", Modified: "false"})
	if want := "unknown\ncommit:   c95dd67\ntime:     2026-11-28T10:00:00Z\nmodified: false\ngo:       go1.26.8\n"; got != want {
		t.Errorf("stamped build: got\n%s\nwant\n%s", got, want)
	}
	if got := Version(nil, false, Stamp{}); strings.Count(got, "unknown") != 5 {
		t.Errorf("no build info: %q", got)
	}
}

// tree is a small command tree like tqmon's.
func tree() (*cobra.Command, *cobra.Command) {
	root := &cobra.Command{Use: "tool", SilenceErrors: true, SilenceUsage: true}
	q := &cobra.Command{Use: "query", RunE: func(*cobra.Command, []string) error { return nil }}
	q.Flags().String("history", "", "")
	q.Flags().String("format", "table", "")
	q.Flags().String("time-format", "", "")
	q.Flags().String("token", "", "")
	q.Flags().String("target", "", "")
	root.AddCommand(q)
	return root, q
}

func TestDidYouMean(t *testing.T) {
	for _, c := range []struct{ typed, want string }{
		{"--hist", "did you mean --history?"},      // a unique prefix
		{"--histroy", "did you mean --history?"},   // a transposition
		{"--fromat=csv", "did you mean --format?"}, // with a value
		{"--t", ""}, // several begin so, none close: no guess
		{"--zzzzzzzz", ""},
	} {
		root, _ := tree()
		SuggestFlags(root)
		root.SetArgs([]string{"query", c.typed})
		err := root.Execute()
		if err == nil {
			t.Fatalf("%s: no error", c.typed)
		}
		if c.want == "" && strings.Contains(err.Error(), "did you mean") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.typed, err, c.want)
		}
	}
}

func TestManPages(t *testing.T) {
	root, _ := tree()
	root.Long = "The tool."
	dir := filepath.Join(t.TempDir(), "man")
	if n, err := Man(root, dir); err != nil || n != 2 {
		t.Fatal(n, err)
	}
	for _, name := range []string{"tool.1", "tool-query.1"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `.TH "TOOL" "1"`) {
			t.Errorf("%s: no header:\n%s", name, data)
		}
	}
	if _, err := Man(root, ""); err == nil {
		t.Error("Man with no directory wrote somewhere")
	}
}

func TestCompleteValues(t *testing.T) {
	root, _ := tree()
	CompleteValues(root, map[string][]string{"format": {"table", "csv", "jsonl"}, "absent": {"x"}})
	var out strings.Builder
	root.SetOut(&out)
	root.SetArgs([]string{cobra.ShellCompRequestCmd, "query", "--format", ""})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "table\ncsv\njsonl\n:4\n") {
		t.Errorf("completion:\n%s", out.String())
	}
}
