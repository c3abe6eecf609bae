package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestConnectFragmentStats: `where s.Mailbox = "M3"` over --connect (a
// separate subject process, the gRPC transport): the selection runs at the
// resident, so --stats counts exactly M3's sends among the SendMessage
// packets (against the ground truth the subject wrote), and reports the
// wire's tuples and bytes; the rows equal the truth's.
func TestConnectFragmentStats(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "subject.sock")
	truthDir := filepath.Join(dir, "truth")
	q := filepath.Join(dir, "m3.tq")
	if err := os.WriteFile(q, []byte(`range of s is SendMessage retrieve (s.Process) where s.Mailbox = "M3"`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	subj := exec.Command(bin, "demo", "--subject", "--listen", sock, "--duration", "700ms", "--seed", "5", "--truth", truthDir)
	var subjErr strings.Builder
	subj.Stderr = &subjErr
	if err := subj.Start(); err != nil {
		t.Fatal(err)
	}
	defer subj.Process.Kill()
	waitFor(t, "the subject's socket", 10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil })
	mon := exec.Command(bin, "query", "--connect", sock, "-f", q, "--format", "csv", "--time-format", "ns", "--stats")
	var monErr strings.Builder
	mon.Stderr = &monErr
	out, err := mon.Output()
	if err != nil {
		t.Fatalf("monitor: %v\n%s", err, monErr.String())
	}
	if err := subj.Wait(); err != nil {
		t.Fatalf("subject: %v\n%s", err, subjErr.String())
	}
	code, want, stderr := tqmon(t, "query", "--history", truthDir, "-f", q, "--format", "csv", "--time-format", "ns")
	if code != 0 {
		t.Fatalf("query over the truth: %s", stderr)
	}
	g, w := sortedRows(string(out)), sortedRows(want)
	if len(w) == 0 {
		t.Fatal("the truth gives no result: the run was too short")
	}
	if !slices.Equal(g, w) {
		t.Errorf("live rows\n%s\ntruth rows\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	// Each M3 send observed is one result row (an event; one process
	// sends once at an instant), and the rows are the truth's: the
	// SendMessage packets must be exactly as many — none of the other
	// mailboxes' sends crossed the wire.
	stats := monErr.String()
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
