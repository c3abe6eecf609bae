package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
)

// quickstart reads the README's quickstart: the build command (in
// backquotes after "Build once:") and every indented command line of the
// section "## Quickstart".
func quickstart(t *testing.T) (build string, lines []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "\n## Quickstart")
	if start < 0 {
		t.Fatal("README.md has no ## Quickstart section")
	}
	section := text[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	if m := regexp.MustCompile("Build once:\\s+`([^`]+)`").FindStringSubmatch(section); m != nil {
		build = m[1]
	}
	for _, l := range strings.Split(section, "\n") {
		if strings.HasPrefix(l, "    ") && strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return build, lines
}

// tqmonCall finds the tqmon commands of a line (at its start, or after
// && ; or |), with sudo.
var tqmonCall = regexp.MustCompile(`(^|&& |; |\| )(sudo )?tqmon `)

// quickstartRun says how a quickstart line runs in the test: interactive
// lines run on a terminal until it shows want, then keys are typed and
// they must exit 0; kernel lines need kernel sensors.
type quickstartRun struct {
	interactive bool
	want, keys  string
	kernel      bool
}

func classify(line string) (quickstartRun, bool) {
	var r quickstartRun
	r.kernel = strings.Contains(line, "--kernel") && (strings.Contains(line, " -c ") || strings.Contains(line, "--display"))
	switch {
	case strings.HasPrefix(line, "cat "), strings.HasPrefix(line, "sudo tqmon "), strings.HasPrefix(line, "tqmon "):
	default:
		return r, false
	}
	switch {
	case regexp.MustCompile(`^tqmon demo(\s+#|$)`).MatchString(line):
		r.interactive, r.want, r.keys = true, "tqmon demo", "q"
	case strings.Contains(line, "--display"):
		r.interactive, r.want, r.keys = true, "tqmon query --kernel", "q"
	case strings.HasPrefix(line, "tqmon shell ") && !strings.Contains(line, " -f "):
		r.interactive, r.want, r.keys = true, "tqmon=> ", `\q`+"\r"
	}
	return r, true
}

// TestReadmeQuickstart runs every line of the README's quickstart as
// written (as TestHelpExamples runs --help's examples): with this test's
// tqmon for tqmon, paths under /tmp moved into a temporary directory;
// the animated ones on a terminal, quit with their key once they show
// themselves; the kernel ones where kernel sensors can run (as root).
func TestReadmeQuickstart(t *testing.T) {
	bin := binary(t)
	build, lines := quickstart(t)
	if build == "" || len(lines) < 10 {
		t.Fatalf("the quickstart's build command %q and %d lines", build, len(lines))
	}
	t.Run("build", func(t *testing.T) {
		tmp := t.TempDir()
		cmd := exec.Command("bash", "-c", strings.ReplaceAll(build, "bin/tqmon", tmp+"/tqmon"))
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", build, err, out)
		}
	})
	for i, line := range lines {
		run, ok := classify(line)
		if !ok {
			t.Errorf("quickstart line %q: not a command this test knows how to run (tqmon, sudo tqmon or cat)", line)
			continue
		}
		t.Run(itoa(i+1), func(t *testing.T) {
			if run.kernel {
				kerneltest.Need(t)
			}
			tmp := t.TempDir()
			l := strings.ReplaceAll(line, "/tmp/", tmp+"/")
			l = tqmonCall.ReplaceAllString(l, "${1}"+bin+" ")
			if run.interactive {
				tm := startTerm(t, "bash", "-c", l)
				tm.expect(20*time.Second, run.want)
				tm.typeText(run.keys)
				if code := tm.exit(15 * time.Second); code != 0 {
					t.Fatalf("%s: exit %d:\n%s", line, code, tm.all())
				}
				return
			}
			cmd := exec.Command("bash", "-c", "set -e -o pipefail\n"+l)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "HOME="+tmp)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if run.kernel && errors.As(err, &ee) && ee.ExitCode() == exitIncomplete && strings.Contains(string(out), "packets lost") {
				// A machine this loaded drains the kernel's ring too
				// slowly: the line ran, and said so (exit 3).
				t.Logf("%s: ran, losing packets under load (exit 3):\n%s", line, out)
				return
			}
			if err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
		})
	}
}
