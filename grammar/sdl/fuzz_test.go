package sdl

import (
	"testing"

	"github.com/tqmon/tqmon/grammar/internal/fronttest"
)

// FuzzParse: Parse never panics; failures are positioned diagnostics inside
// the text; successes give complete trees whose canonical text parses back
// to the same text. The examples are seeds a few statements at a time: the
// fuzzer skips texts longer than fronttest.MaxFuzzLen.
func FuzzParse(f *testing.F) {
	fronttest.AddSeeds(f, sdlExample, sensorExample)
	f.Fuzz(frontEnd.Fuzz)
}
