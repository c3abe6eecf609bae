package testkit

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// SixWayJoin is a 6-variable self-join of Process whose bindings
// multiply: every process binds with every other in its state. Over
// RunawayHistory it holds more with every tuple (a memory budget's test).
const SixWayJoin = `range of a is Process
range of b is Process
range of c is Process
range of d is Process
range of e is Process
range of f is Process
retrieve Six (P = a.Process)
where a.State = b.State and b.State = c.State and c.State = d.State and d.State = e.State and e.State = f.State
`

// RunawayHistory writes a history directory with the paper's description
// and a Process relation of n processes, each in one state for a long
// time, beginning one after another: under SixWayJoin every new tuple
// binds with all those before it.
func RunawayHistory(t testing.TB, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("Process,State,from,to\n")
	for p := range n {
		fmt.Fprintf(&b, "P%d,%s,%d,%d\n", p, [2]string{"Ready", "Running"}[p%2], p, p+100*n)
	}
	sdl := ReadFile(t, filepath.Join(Root(t), "testdata", "paper", "os.sdl"))
	return WriteFiles(t, map[string]string{"os.sdl": sdl, "Process.csv": b.String()})
}
