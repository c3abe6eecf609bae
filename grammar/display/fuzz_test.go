package display

import (
	"strings"
	"testing"
)

// FuzzParse: Parse never panics; failures are positioned diagnostics inside
// the text; successes give complete trees whose canonical text parses back
// to the same text.
func FuzzParse(f *testing.F) {
	f.Add(strings.Join(paperStmts, "\n"))
	f.Fuzz(frontEnd.Fuzz)
}
