package main

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/internal/testkit"
)

// readLines reads a file of lines ("" when it does not exist), sorted.
func readLines(path string) []string {
	data, _ := os.ReadFile(path)
	text := strings.TrimSuffix(string(data), "\n")
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	slices.Sort(lines)
	return lines
}

// sendLines are the lines of the --exec log at path for Sends tuples,
// sorted.
func sendLines(path string) []string {
	var out []string
	for _, l := range readLines(path) {
		if strings.HasPrefix(l, "Sends ") {
			out = append(out, l)
		}
	}
	return out
}

// execLine is what the tests' --exec writes per Sends tuple.
const execLine = `echo "$TQMON_REL $TQMON_KIND $TQMON_AT $TQMON_Process $TQMON_Mailbox" >> `

// sendsP1 is the reference: the lines execLine writes for the Sends of
// P1 in the paper's history, from query --exec.
func sendsP1(t *testing.T) []string {
	t.Helper()
	log := filepath.Join(t.TempDir(), "ref")
	code, _, errs := tqmon(t, "query", "--history", paper, "-e", sendsQuery+` where s.Process = P1`,
		"--exec-rate", "1000", "--exec", execLine+log)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	want := readLines(log)
	if len(want) == 0 {
		t.Fatal("no Sends of P1")
	}
	return want
}

// TestShellExport: the shell exports each statement's results as query
// does (here --exec, the tuple in the command's environment).
func TestShellExport(t *testing.T) {
	want := sendsP1(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	script := filepath.Join(dir, "script.tq")
	os.WriteFile(script, []byte(sendsQuery+" where s.Process = P1;\n"), 0o644)
	code, _, errs := tqmon(t, "shell", "--history", paper, "--history-file", "", "-f", script,
		"--exec-rate", "1000", "--exec", execLine+log)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	if got := readLines(log); !slices.Equal(got, want) {
		t.Errorf("shell --exec ran for\n%s\nquery --exec for\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if code, _, errs := tqmon(t, "shell", "--history", paper, "--prometheus", ":0", "--prometheus-hold", "-f", script); code != exitUsage || !strings.Contains(errs, "--prometheus-hold does not go with the shell") {
		t.Errorf("shell --prometheus-hold: exit %d, %q", code, errs)
	}
}

// TestViewExport: view exports the results of its queries as the display
// computes them — played to the end, the same tuples as query's — and
// what the exporters say waits until the display has ended.
func TestViewExport(t *testing.T) {
	want := sendsP1(t)
	bin := binary(t)
	log := filepath.Join(t.TempDir(), "log")
	tm := startTerm(t, bin, "view", "--history", "testdata/paper", "--display", "testdata/paper/os.display",
		"-f", "testdata/paper/resumed_by_p1.tq", "-e", sendsQuery+` where s.Process = P1`,
		"--speed", "100000", "--exec-rate", "1000", "--exec", execLine+log)
	sends := func() []string { return sendLines(log) }
	deadline := time.Now().Add(60 * time.Second)
	for len(sends()) < len(want) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // nothing more comes
	tm.typeText("q")
	if code := tm.exit(20 * time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, tm.all())
	}
	if got := sends(); !slices.Equal(got, want) {
		t.Errorf("view --exec ran for\n%s\nquery --exec for\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRecordExport: record exports each recorded relation's tuples under
// the relation's name as it records them — to an OTLP collector here:
// a span per Waiting tuple, a log record per SendMessage — the same
// tuples the database then holds.
func TestRecordExport(t *testing.T) {
	addr, col := startCollector(t)
	dbDir := filepath.Join(t.TempDir(), "run.db")
	code, _, errs := tqmon(t, "record", "--demo", "--duration", "1s", "--seed", "3", "--db", dbDir,
		"--relations", "SendMessage,Waiting", "--otlp", addr)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	if strings.Contains(errs, "--otlp") {
		t.Errorf("stderr: %s", errs)
	}
	var spans, logs int
	for _, l := range col.received(t) {
		switch {
		case strings.HasPrefix(l, "Waiting ") && !strings.HasSuffix(l, " log"):
			spans++
		case strings.HasPrefix(l, "SendMessage ") && strings.HasSuffix(l, " log"):
			logs++
		default:
			t.Errorf("unexpected: %s", l)
		}
	}
	count := func(q string) int {
		code, out, errs := tqmon(t, "query", "--db", dbDir, "--format", "csv", "-e", q)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, errs)
		}
		return strings.Count(strings.TrimSpace(out), "\n")
	}
	wantLogs := count(`range of s is SendMessage retrieve (s.Process, s.Mailbox)`)
	wantSpans := count(`range of w is Waiting retrieve (w.Process, w.Mailbox)`)
	if logs != wantLogs || spans != wantSpans || logs == 0 || spans == 0 {
		t.Errorf("exported %d SendMessage log records and %d Waiting spans; the database holds %d and %d", logs, spans, wantLogs, wantSpans)
	}
}

// freeAddr is a local TCP address nothing listens on now (for a
// --prometheus whose note is held while a display runs).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// scrapeUntil scrapes url until every metric of want is served with its
// value (or d has passed, or tm's command has ended) and returns the last
// scrape.
func scrapeUntil(t *testing.T, tm *pterm, url string, want map[string]float64, d time.Duration) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(d)
	var got map[string]float64
	for time.Now().Before(deadline) {
		select {
		case <-tm.done:
			t.Fatalf("ended before serving the metrics:\n%s", tm.all())
		default:
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			got = testkit.Scrape(t, url)
			ok := true
			for k, w := range want {
				ok = ok && got[k] == w
			}
			if ok {
				return got
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return got
}

// sendsCounted runs tqmon with args and sendsQuery, and counts its
// Sends as the Prometheus exporter does: per sender and mailbox, by
// metric name and labels. Fewer than two series fail the test.
func sendsCounted(t *testing.T, args ...string) map[string]float64 {
	t.Helper()
	code, out, errs := tqmon(t, append(args, "-e", sendsQuery, "--format", "jsonl")...)
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s", args, code, errs)
	}
	want := map[string]float64{}
	for _, r := range readJSONL(t, out) {
		want["tqmon_Sends_events_total"+r.labelKey()]++
	}
	if len(want) < 2 {
		t.Fatalf("too few sends: %v", want)
	}
	return want
}

// TestReplayDisplayExport: replay --display serves its queries' results
// as Prometheus metrics while the display plays — played to the end, the
// sends counted per sender and mailbox as query's output has them — and
// its exporters' notes wait until the display has ended.
func TestReplayDisplayExport(t *testing.T) {
	bin := binary(t)
	db := filepath.Join(t.TempDir(), "paper.db")
	if code, _, errs := tqmon(t, "import", "--history", paper, "--db", db); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, errs)
	}
	want := sendsCounted(t, "query", "--history", paper)
	addr := freeAddr(t)
	url := "http://" + addr + "/metrics"
	tm := startTerm(t, bin, "replay", "--db", db, "--display", paperSpec, "-f", paperQuery, "-e", sendsQuery, "--max", "--prometheus", addr)
	got := scrapeUntil(t, tm, url, want, 60*time.Second)
	for k, w := range want {
		if got[k] != w {
			t.Errorf("scraped %s %v, query's output counts %v", k, got[k], w)
		}
	}
	if strings.Contains(tm.all(), "serving metrics") {
		t.Errorf("the exporter's note was written over the display:\n%s", tm.all())
	}
	tm.typeText("q")
	if code := tm.exit(20 * time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, tm.all())
	}
	tm.expect(5*time.Second, "tqmon: serving metrics at "+url)
}

// TestDemoDisplayExport: the live demo's display runs --exec per result
// tuple as the display computes them (the live path of the same wiring).
func TestDemoDisplayExport(t *testing.T) {
	bin := binary(t)
	log := filepath.Join(t.TempDir(), "log")
	tm := startTerm(t, bin, "demo", "--seed", "3", "-f", paperQuery, "-e", sendsQuery, "--exec-rate", "1000", "--exec", execLine+log)
	sends := func() []string { return sendLines(log) }
	deadline := time.Now().Add(30 * time.Second)
	for len(sends()) < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	tm.typeText("q")
	if code := tm.exit(20 * time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, tm.all())
	}
	lines := sends()
	if len(lines) < 3 {
		t.Fatalf("--exec ran %d times in 30 s of the demo", len(lines))
	}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) != 5 || f[0] != "Sends" || f[1] != "event" || !strings.HasPrefix(f[3], "P") || !strings.HasPrefix(f[4], "M") {
			t.Errorf("--exec saw %q", l)
		}
	}
}

// TestConnectDisplayExport: query --connect --display serves the live
// results as Prometheus metrics while it draws them: sends counted and
// the watermark moving; the exporter's note waits for the terminal.
func TestConnectDisplayExport(t *testing.T) {
	bin := binary(t)
	sock := filepath.Join(t.TempDir(), "subject.sock")
	subj := exec.Command(bin, "demo", "--subject", "--listen", sock, "--duration", "60s", "--scale", "5")
	if err := subj.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { subj.Process.Kill(); subj.Wait() })
	waitFor(t, "the subject's socket", 10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil })
	addr := freeAddr(t)
	url := "http://" + addr + "/metrics"
	tm := startTerm(t, bin, "query", "--connect", sock, "--display", paperSpec, "-f", paperQuery, "-e", sendsQuery, "--prometheus", addr)
	deadline := time.Now().Add(30 * time.Second)
	sends, wm := 0.0, 0.0
	for (sends < 3 || wm <= 0) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		resp, err := http.Get(url)
		if err != nil {
			continue // not listening yet
		}
		resp.Body.Close()
		sends = 0
		got := testkit.Scrape(t, url)
		for k, v := range got {
			if strings.HasPrefix(k, "tqmon_Sends_events_total{") {
				sends += v
			}
		}
		wm = got["tqmon_watermark_seconds{}"]
	}
	if sends < 3 || wm <= 0 {
		t.Errorf("after 30 s: %v sends counted, watermark %v", sends, wm)
	}
	tm.typeText("q")
	if code := tm.exit(20 * time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, tm.all())
	}
	tm.expect(5*time.Second, "tqmon: serving metrics at "+url)
}
