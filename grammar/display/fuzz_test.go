package display

import (
	"strings"
	"testing"

	"github.com/tqmon/tqmon/grammar/internal/fronttest"
)

// FuzzParse: Parse never panics; failures are positioned diagnostics inside
// the text; successes give complete trees whose canonical text parses back
// to the same text. The paper's display is a seed a few statements at a
// time: the fuzzer skips texts longer than fronttest.MaxFuzzLen.
func FuzzParse(f *testing.F) {
	fronttest.AddSeeds(f, strings.Join(paperStmts, "\n"))
	f.Fuzz(frontEnd.Fuzz)
}
