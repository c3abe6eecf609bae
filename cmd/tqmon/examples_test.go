package main

import (
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
)

// exampleParagraphs splits a command's Example text into paragraphs (blank
// lines apart) of command lines: "tqmon ..." lines, with "\" continuations
// joined; comments and prompts are dropped.
func exampleParagraphs(example string) [][]string {
	var paras [][]string
	var cur []string
	var pending string
	for _, l := range strings.Split(example, "\n") {
		t := strings.TrimSpace(l)
		if pending != "" {
			pending += " " + strings.TrimSuffix(t, `\`)
			if !strings.HasSuffix(t, `\`) {
				cur = append(cur, strings.Join(strings.Fields(pending), " "))
				pending = ""
			}
			continue
		}
		switch {
		case t == "":
			if len(cur) > 0 {
				paras = append(paras, cur)
				cur = nil
			}
		case strings.HasPrefix(t, "tqmon ") || strings.HasPrefix(t, "sudo tqmon ") || strings.HasPrefix(t, "source <(tqmon "):
			if strings.HasSuffix(t, `\`) {
				pending = strings.TrimSuffix(t, `\`)
				continue
			}
			cur = append(cur, t)
		}
	}
	if len(cur) > 0 {
		paras = append(paras, cur)
	}
	return paras
}

// exampleRun says how a command's chosen example runs in the test.
type exampleRun struct {
	para int // which paragraph of the Example
	// want is text the last command's output must contain ("" for none).
	want string
	// keys, for an interactive example: it runs on a terminal until the
	// picture shows want, then the keys are typed and it must exit 0.
	keys string
	// kernel examples need kernel sensors (root, BPF): they skip
	// elsewhere, and hold the lock of the tests that load programs.
	kernel bool
}

// helpExamples is, for every command, the example of its --help the test
// runs (paths under /tmp are moved into a temporary directory).
var helpExamples = map[string]exampleRun{
	"query":           {para: 0, want: "P2,2:54:20"},
	"demo":            {para: 2, want: "P2"},
	"shell":           {para: 1, want: "2:54:20"},
	"view":            {para: 0, want: "M7", keys: "q"},
	"record":          {para: 0, want: "Process"},
	"replay":          {para: 0, want: "Process"},
	"export":          {para: 0, want: "P2"},
	"import":          {para: 0, want: "P2"},
	"db check":        {para: 0, want: "no damage"},
	"db repair":       {para: 0, want: "nothing lost"},
	"sensors check":   {para: 0},
	"sensors compile": {para: 0},
	"completion":      {para: 3},
	"resident":        {para: 0, kernel: true},
	"serve":           {para: 0, want: "Process"},
	"sensors list":    {para: 0, want: "Syscall"},
	"man":             {para: 0, want: "tqmon-query.1"},
}

func commandPaths(c *cobra.Command, prefix string, out *[]*cobra.Command) {
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		if sub.Runnable() {
			*out = append(*out, sub)
		}
		commandPaths(sub, prefix+sub.Name()+" ", out)
	}
}

// TestHelpExamples: every command's --help has examples, and one of them
// (helpExamples) is run here as written.
func TestHelpExamples(t *testing.T) {
	bin := binary(t)
	var cmds []*cobra.Command
	commandPaths(newRoot(io.Discard, io.Discard), "", &cmds)
	for _, c := range cmds {
		path := strings.TrimPrefix(c.CommandPath(), "tqmon ")
		t.Run(strings.ReplaceAll(path, " ", "-"), func(t *testing.T) {
			if strings.TrimSpace(c.Example) == "" {
				t.Fatalf("tqmon %s --help has no example", path)
			}
			run, ok := helpExamples[path]
			if !ok {
				t.Fatalf("no example of tqmon %s is run by this test: add it to helpExamples", path)
			}
			if run.kernel {
				kerneltest.Need(t)
			}
			paras := exampleParagraphs(c.Example)
			if run.para >= len(paras) {
				t.Fatalf("tqmon %s --help has %d example paragraphs", path, len(paras))
			}
			runExample(t, bin, root, run, paras[run.para])
		})
	}
}

// runExample runs an example paragraph's lines with bin for tqmon, in dir,
// as TestHelpExamples does: paths under /tmp moved into a temporary
// directory, interactive ones on a terminal.
func runExample(t *testing.T, bin, dir string, run exampleRun, paragraph []string) {
	t.Helper()
	tmp := t.TempDir()
	lines := slices.Clone(paragraph)
	for i, line := range lines {
		line = strings.ReplaceAll(line, "/tmp/", tmp+"/")
		line = strings.ReplaceAll(line, "/run/", tmp+"/")
		line = strings.ReplaceAll(line, "./ossensors", tmp+"/ossensors")
		line = strings.TrimPrefix(line, "sudo ") // the tests run as root where it matters
		lines[i] = strings.Replace(line, "tqmon ", bin+" ", 1)
	}
	if run.keys != "" { // interactive: on a terminal
		args := strings.Fields(lines[len(lines)-1])
		tm := startTerm(t, args[0], args[1:]...)
		tm.expect(15*time.Second, run.want)
		tm.typeText(run.keys)
		if code := tm.exit(10 * time.Second); code != 0 {
			t.Fatalf("%s: exit %d", lines[len(lines)-1], code)
		}
		return
	}
	// One script, as a person would type it; what it starts in the
	// background is given a second to come up, and stopped at the end.
	script := "set -e\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"
	for _, l := range lines {
		script += l + "\n"
		if strings.HasSuffix(l, "&") {
			script += "sleep 1\n"
		}
	}
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+tmp, "XDG_CACHE_HOME="+tmp+"/cache")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(lines, "\n"), err, out)
	}
	if run.want != "" && !strings.Contains(string(out), run.want) {
		t.Fatalf("%s: output lacks %q:\n%s", strings.Join(lines, "\n"), run.want, out)
	}
}
