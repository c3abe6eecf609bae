package defaults

import (
	"os"
	"testing"
)

// The embedded copies are the files in testdata/paper.
func TestCopiesEqual(t *testing.T) {
	for name, text := range map[string]string{PaperSpecName: PaperSpec(), PaperQueryName: PaperQuery()} {
		want, err := os.ReadFile("../../testdata/paper/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if text != string(want) {
			t.Errorf("display/defaults/%s differs from testdata/paper/%s: copy it again", name, name)
		}
	}
}
