package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestConnectFragmentStats: `where s.Mailbox = "M3"` over --connect (a
// separate subject process, the gRPC transport): the selection runs at the
// resident, so --stats counts exactly M3's sends among the SendMessage
// packets, and reports the wire's tuples and bytes; the rows equal those
// of the ground truth the subject wrote.
func TestConnectFragmentStats(t *testing.T) {
	q := filepath.Join(t.TempDir(), "m3.tq")
	if err := os.WriteFile(q, []byte(`range of s is SendMessage retrieve (s.Process) where s.Mailbox = "M3"`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, w, stats := connectRun(t, q)
	if !slices.Equal(g, w) {
		t.Errorf("live rows\n%s\ntruth rows\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	// Each M3 send observed is one result row (an event; one process
	// sends once at an instant), and the rows are the truth's: the
	// SendMessage packets must be exactly as many — none of the other
	// mailboxes' sends crossed the wire.
	m := regexp.MustCompile(`packets SendMessage: (\d+)`).FindStringSubmatch(stats)
	if m == nil {
		t.Fatalf("--stats lacks SendMessage packets:\n%s", stats)
	}
	if got, _ := strconv.Atoi(m[1]); got != len(g) {
		t.Errorf("%d SendMessage packets crossed the wire for %d sends to M3", got, len(g))
	}
	if !regexp.MustCompile(`wire: \d+ tuples, \d+ bytes`).MatchString(stats) {
		t.Errorf("--stats lacks the wire counts:\n%s", stats)
	}
	t.Logf("stats:\n%s", stats)
}
