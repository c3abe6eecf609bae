package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/store/history"
)

// binary builds tqmon once for tests that run it as a separate process.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs tqmon processes")
	}
	binMu.Lock()
	defer binMu.Unlock()
	bin := filepath.Join(binDir, "tqmon")
	if _, err := os.Stat(bin); err != nil {
		out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
		if err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	return bin
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sortedRows drops a CSV's header and sorts its rows.
func sortedRows(csv string) []string {
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	rows := slices.Clone(lines[1:])
	slices.Sort(rows)
	return rows
}

// TestConnectSeparateSubject runs the demo subject as its own process and
// tqmon query --connect as another: the streamed results, once sorted,
// are those of the same query over the ground truth the subject wrote.
func TestConnectSeparateSubject(t *testing.T) {
	q := filepath.Join(root, "testdata", "paper", "resumed_by_p1.tq")
	g, w, stats := connectRun(t, q)
	if !slices.Equal(g, w) {
		t.Errorf("live rows\n%s\ntruth rows\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	if !strings.Contains(stats, "packets SendMessage: ") {
		t.Errorf("--stats output lacks per-sensor packets:\n%s", stats)
	}
}

// connectRun runs the demo subject (seed 5, 700 ms) as its own process,
// writing its ground truth, and tqmon query --connect --stats with query
// file q as another; it returns the monitor's rows and the rows of q over
// the truth (CSV, sorted, headers dropped) and the monitor's stderr.
func connectRun(t *testing.T, q string) (live, truth []string, stats string) {
	t.Helper()
	bin := binary(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "subject.sock")
	truthDir := filepath.Join(dir, "truth")
	subj := exec.Command(bin, "demo", "--subject", "--listen", sock, "--wait-limit", "0", "--duration", "700ms", "--seed", "5", "--truth", truthDir)
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
	live, truth = sortedRows(string(out)), sortedRows(want)
	if len(truth) == 0 {
		t.Fatal("the truth gives no result: the run was too short")
	}
	return live, truth, monErr.String()
}

// TestKilledMonitorLeavesNoFlags: a monitor killed with SIGKILL leaves no
// enable flag set in the subject once its lease has lapsed.
func TestKilledMonitorLeavesNoFlags(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	clock := demo.NewClock(1000)
	res := resident.New(ossensors.Spec(), demo.Options(clock, nil))
	defer res.Close()
	srv, err := transport.NewServer(transport.Adapt(res.Hello, res.Open), transport.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := transport.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go demo.New(ossensors.New(res), demo.DefaultConfig(2)).Run(ctx)

	mon := exec.Command(bin, "query", "--connect", sock, "--lease", "500ms",
		"-e", `range of s is SendMessage retrieve (s.Mailbox) where s.Process = "P1"`)
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	enabled := func() bool { return len(res.Flags()) > 0 }
	waitFor(t, "the monitor to enable SendMessage for P1", 10*time.Second, enabled)
	if got := res.Flags()["SendMessage"]; !slices.Contains(got, "P1") {
		t.Fatalf("flags %v, want SendMessage for P1", res.Flags())
	}
	mon.Process.Signal(syscall.SIGKILL)
	mon.Wait()
	waitFor(t, "the flags to be cleared", 5*time.Second, func() bool { return len(res.Flags()) == 0 })
}

// windowEnd reads the end of an observation.csv ("from,to" then one row).
func windowEnd(t *testing.T, data []byte) int64 {
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var from, to int64
	if len(lines) != 2 {
		t.Fatalf("observation.csv: %q", data)
	}
	if _, err := fmt.Sscanf(lines[1], "%d,%d", &from, &to); err != nil {
		t.Fatalf("observation.csv: %v", err)
	}
	return to
}

// binDir holds the tqmon binary the tests run (binary): a directory of
// this test process's own, made by TestMain, so that no other test run on
// the machine can remove or replace the binary while it runs.
var (
	binDir string
	binMu  sync.Mutex // one build at a time
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tqmon-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestConnectTwoSubjects: two subject processes, one monitor connected to
// both; their packets are merged in timestamp order by watermark, and the
// results are those of the query over the union of the two ground truths.
func TestConnectTwoSubjects(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	q := `range of s is SendMessage
range of w is Waiting
retrieve (Sender = s.Process, Waiter = w.Process) valid at end of w where s.Mailbox = w.Mailbox and s.Process = "P1" when s precede end of w`
	var subjects []*exec.Cmd
	var socks, truths []string
	for i := 0; i < 2; i++ {
		sock := filepath.Join(dir, fmt.Sprintf("s%d.sock", i))
		tr := filepath.Join(dir, fmt.Sprintf("truth%d", i))
		cmd := exec.Command(bin, "demo", "--subject", "--listen", sock, "--wait-limit", "0", "--duration", "600ms", "--seed", fmt.Sprint(20+i), "--truth", tr)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		subjects, socks, truths = append(subjects, cmd), append(socks, sock), append(truths, tr)
	}
	for _, s := range socks {
		waitFor(t, "a subject's socket", 10*time.Second, func() bool { _, err := os.Stat(s); return err == nil })
	}
	mon := exec.Command(bin, "query", "--connect", socks[0], "--connect", socks[1], "-e", q, "--format", "csv", "--time-format", "ns")
	var monErr strings.Builder
	mon.Stderr = &monErr
	out, err := mon.Output()
	if err != nil {
		t.Fatalf("monitor: %v\n%s", err, monErr.String())
	}
	for _, s := range subjects {
		if err := s.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	sameAsTruths(t, string(out), dir, truths, "-e", q)
}

// mergeTruths writes the union of the subjects' ground truths as one
// history under dir and returns it.
func mergeTruths(t *testing.T, dir string, truths []string) string {
	t.Helper()
	// The union of the truths, as one history — without the entity
	// relations: the two subjects' P1s are not one entity (one P1 in two
	// states at once is an error), and the query reads none of them.
	merged := filepath.Join(dir, "merged")
	os.MkdirAll(merged, 0o755)
	hd, err := history.Open(truths[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range truths {
		ents, _ := os.ReadDir(tr)
		for _, e := range ents {
			data, _ := os.ReadFile(filepath.Join(tr, e.Name()))
			path := filepath.Join(merged, e.Name())
			rel := hd.Catalog.Lookup(strings.TrimSuffix(e.Name(), ".csv"))
			switch {
			case rel != nil && rel.Class == algebra.ClassEntity:
			case e.Name() == "observation.csv" && i > 0:
				// The union observed until the later of the two ends.
				old, _ := os.ReadFile(path)
				if windowEnd(t, data) > windowEnd(t, old) {
					os.WriteFile(path, data, 0o644)
				}
			case i > 0 && strings.HasSuffix(e.Name(), ".csv"):
				lines := strings.SplitN(string(data), "\n", 2)
				f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
				f.WriteString(lines[1])
				f.Close()
			default:
				os.WriteFile(path, data, 0o644)
			}
		}
	}
	return merged
}

// sameAsTruths checks a live run's CSV output (times in ns) against the
// query (source flags src) over the union of the subjects' truths.
func sameAsTruths(t *testing.T, out, dir string, truths []string, src ...string) {
	t.Helper()
	merged := mergeTruths(t, dir, truths)
	code, want, stderr := tqmon(t, append(append([]string{"query", "--history", merged}, src...), "--format", "csv", "--time-format", "ns")...)
	if code != 0 {
		t.Fatalf("query over the merged truth: %s", stderr)
	}
	g, w := sortedRows(out), sortedRows(want)
	if len(w) == 0 {
		t.Fatal("no result over the truths: the run was too short")
	}
	if !slices.Equal(g, w) {
		t.Errorf("live rows (%d) differ from the union of the truths' (%d)", len(g), len(w))
	}
}
