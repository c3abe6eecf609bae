package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/internal/testkit"
)

var (
	paperSpec  = filepath.Join(paper, "os.display")
	paperQuery = filepath.Join(paper, "resumed_by_p1.tq")
)

// Bad display specs: positioned errors with the line and a caret, exit 2,
// and the terminal never touched (these run without one).
func TestDisplaySpecErrors(t *testing.T) {
	dir := testkit.WriteFiles(t, map[string]string{
		"syntax.display": "display Process as hexagon\n",
		"names.display": "display Processer as box\n" +
			"display Process as circle label Proces shade State (Runing = 100%)\n" +
			"display Waiting as arrow from Mailbox to Process\n",
	})
	syntax, names := filepath.Join(dir, "syntax.display"), filepath.Join(dir, "names.display")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"view", "--history", paper, "--display", syntax},
			syntax + ":1:20: unexpected 'hexagon', expected one of: 'box', 'circle', 'oval', 'text', 'point', 'line', 'inside', ...\n" +
				"  display Process as hexagon\n" +
				"                     ^\n"},
		{[]string{"view", "--history", paper, "--display", names},
			names + ":1:9: unknown relation Processer (did you mean Processor?)\n" +
				"  display Processer as box\n" +
				"          ^\n" +
				names + ":2:33: Process has no attribute Proces (did you mean Process?)\n" +
				"  display Process as circle label Proces shade State (Runing = 100%)\n" +
				"                                  ^\n" +
				names + ":2:53: Runing is not a member of State's type enum(Ready, Running, Waiting, Done) (did you mean Running?)\n" +
				"  display Process as circle label Proces shade State (Runing = 100%)\n" +
				"                                                      ^\n" +
				names + ":3:31: no icon shows Mailbox entities: display a relation of them as box, circle, oval, text, point or line\n" +
				"  display Waiting as arrow from Mailbox to Process\n" +
				"                                ^\n"},
		// A derived relation the queries do not define.
		{[]string{"view", "--history", paper, "--display", paperSpec},
			paperSpec + ":12:9: unknown relation ResumedbyP1 (known: Mailbox, Process, Processor, RunningOn, SendMessage, Waiting)\n" +
				"  display ResumedbyP1 as flash Process\n" +
				"          ^\n"},
		{[]string{"demo", "--display", names, "--duration", "1s"}, ""},
	}
	for _, tt := range tests {
		code, out, errs := tqmon(t, tt.args...)
		if tt.want == "" {
			// Same errors as view, against the demo's own catalog.
			if code != 2 || !strings.Contains(errs, names+":1:9: unknown relation Processer") {
				t.Errorf("%q: exit %d\n%s", tt.args, code, errs)
			}
			continue
		}
		if code != 2 || out != "" || errs != tt.want {
			t.Errorf("%q: exit %d, stdout %q\ngot:\n%s\nwant:\n%s", tt.args, code, out, errs, tt.want)
		}
	}
}

func TestViewUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"view", "--display", paperSpec}, "tqmon: view needs --history DIR (a directory with a .sdl file and CSV files) or --parquet DIR (a record --parquet directory)\n"},
		{[]string{"view", "--history", paper}, "tqmon: view needs --display SPEC (a display spec file)\n"},
		{[]string{"view", "--history", paper, "--display", paperSpec, "--speed", "0"},
			"tqmon: --speed 0: want a positive number of subject seconds per real second\n"},
		{[]string{"view", "--history", paper, "--display", paperSpec, "--from", "noon"},
			"tqmon: --from \"noon\": bad time: \"noon\" is not beginning, forever, integer nanoseconds, H:MM:SS[.fraction] or RFC 3339\n"},
		{[]string{"view", "--history", paper, "--display", filepath.Join(paper, "nope.display")},
			"tqmon: display spec: open " + filepath.Join(paper, "nope.display") + ": no such file or directory\n"},
		{[]string{"query", "--history", paper, "--display", paperSpec, "-f", paperQuery},
			"tqmon: --display goes with --connect, --nats or --kernel; to play a recorded history into a display, use tqmon view --history DIR --display SPEC\n"},
	}
	for _, tt := range tests {
		code, out, errs := tqmon(t, tt.args...)
		if code != 2 || out != "" || errs != tt.want {
			t.Errorf("%q: exit %d, stdout %q\ngot:\n%s\nwant:\n%s", tt.args, code, out, errs, tt.want)
		}
	}
	code, out, _ := tqmon(t, "view", "--help")
	if code != 0 || !strings.Contains(out, "--speed") || !strings.Contains(out, "tqmon view --history testdata/paper") {
		t.Errorf("help: exit %d\n%s", code, out)
	}
}
