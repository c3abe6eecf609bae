package shell

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/subject"
)

const paper = "../../testdata/paper"

// TestShellScript: statements piped in run without prompts, like a file.
func TestShellScript(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(paper, "resumed_by_p1.tq"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := subject.Open(context.Background(), subject.Options{History: paper})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var out, errb bytes.Buffer
	code := Run(Config{Subject: sub, Output: format.Options{Kind: format.CSV, Time: algebra.TimeClock}}, bytes.NewReader(script), &out, &errb)
	if code != nil || errb.Len() > 0 {
		t.Fatalf("error %v, stderr:\n%s", code, errb.String())
	}
	want, _ := os.ReadFile(filepath.Join(paper, "resumed_by_p1.expected.csv"))
	if out.String() != string(want) {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
