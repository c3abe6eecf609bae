package tquel

import "testing"

// FuzzParse: Parse never panics; failures are positioned diagnostics inside
// the text; successes give complete trees whose canonical text parses back
// to the same tree and the same text.
func FuzzParse(f *testing.F) {
	f.Add("retrieve (p.x) where p.y = 1")
	f.Fuzz(frontEnd.Fuzz)
}
