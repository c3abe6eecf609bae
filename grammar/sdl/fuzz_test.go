package sdl

import "testing"

// FuzzParse: Parse never panics; failures are positioned diagnostics inside
// the text; successes give complete trees whose canonical text parses back
// to the same text.
func FuzzParse(f *testing.F) {
	f.Add(sdlExample)
	f.Add(sensorExample)
	f.Fuzz(frontEnd.Fuzz)
}
