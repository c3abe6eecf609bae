package exec_test

import (
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/store/history"
)

// TestEdgesOfTime runs queries at the ends of the time line over one-process
// histories, through the interpreter and the reference evaluator; both must
// give docs/tquel.md's result. The event at forever is [forever, forever+1) like
// every other event: it does not precede itself and overlaps itself, and an
// open tuple's end (an event at forever) precedes nothing at forever. Times
// before the epoch are times like any other.
func TestEdgesOfTime(t *testing.T) {
	sdl := testkit.ReadFile(t, filepath.Join(testkit.Root(t), "testdata/tquel/os.sdl"))
	empty := map[string]string{
		"os.sdl":          sdl,
		"RunningOn.csv":   "Process,Processor,from,to\n",
		"Waiting.csv":     "Process,Mailbox,from,to\n",
		"SendMessage.csv": "Process,Mailbox,at\n",
	}
	histories := map[string]string{
		// Running, then Waiting from 1:00:10 on (still open).
		"open": "Process,State,from,to\nP1,Running,1:00:00,1:00:10\nP1,Waiting,1:00:10,\n",
		// Running from before the epoch.
		"epoch": "Process,State,from,to\nP1,Running,1969-12-31T23:59:40Z,1970-01-01T00:00:10Z\n",
	}
	tests := []struct {
		hist, query, want string
	}{
		{"open", `retrieve (p.State) when end of p precede "forever"`,
			"State,from,to\nRunning,3600000000000,3610000000000\n"},
		{"open", `retrieve (p.State) when end of p overlap "forever"`,
			"State,from,to\nWaiting,3610000000000,forever\n"},
		{"open", `retrieve (p.State) valid at end of p when end of p equal "forever"`,
			"State,at\nWaiting,forever\n"},
		{"open", `retrieve (p.State) when "forever" precede "forever"`, "State,from,to\n"},
		{"open", `retrieve (p.State) when "7" precede "7"`, "State,from,to\n"},
		{"open", `retrieve (p.State) where p.State = "Waiting" when "forever" overlap "forever"`,
			"State,from,to\nWaiting,3610000000000,forever\n"},
		{"open", `retrieve (p.State) where p.State = "Waiting" when "7" overlap "7"`,
			"State,from,to\nWaiting,3610000000000,forever\n"},
		{"open", `retrieve (p.State) when p overlap "forever"`, "State,from,to\n"},
		{"open", `retrieve (p.State) valid at end of (p extend "forever") where p.State = "Running"`,
			"State,at\nRunning,forever\n"},
		{"open", `retrieve (p.State) valid from begin of p to end of (p extend "forever") where p.State = "Running"`,
			"State,from,to\nRunning,3600000000000,forever\n"},
		{"epoch", `retrieve (p.Process, p.State) when p overlap "1970-01-01T00:00:05Z"`,
			"Process,State,from,to\nP1,Running,-20000000000,10000000000\n"},
		{"epoch", `retrieve (p.Process, p.State) when p overlap "-20000000000"`,
			"Process,State,from,to\nP1,Running,-20000000000,10000000000\n"},
		{"epoch", `retrieve (p.Process) valid at end of p when "beginning" precede p`,
			"Process,at\nP1,10000000000\n"},
		{"epoch", `retrieve (p.Process) valid at "now" when p precede "now"`,
			"Process,at\nP1,10000000000\n"},
	}
	for _, tt := range tests {
		t.Run(tt.hist+": "+tt.query, func(t *testing.T) {
			files := map[string]string{"Process.csv": histories[tt.hist]}
			for k, v := range empty {
				files[k] = v
			}
			h, err := history.Load(testkit.WriteFiles(t, files))
			if err != nil {
				t.Fatal(err)
			}
			_, now, _ := h.Extent()
			stmts := testkit.Compile(t, h.Catalog, "q", "range of p is Process "+tt.query, now)
			got, _, err := interpret(h.Catalog, h, stmts, exec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if g := render(got[0]); g != tt.want {
				t.Errorf("interpreter:\n%s\nwant:\n%s", g, tt.want)
			}
			refd, err := ref.Eval(h, stmts)
			if err != nil {
				t.Fatal(err)
			}
			if g := render(refd[0]); g != tt.want {
				t.Errorf("reference:\n%s\nwant:\n%s", g, tt.want)
			}
		})
	}
}
