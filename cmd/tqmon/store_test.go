package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/history"
	"github.com/tqmon/tqmon/store/truth"
	"github.com/tqmon/tqmon/subject"
)

// sameDirs compares two directories file by file.
func sameDirs(t *testing.T, a, b string) {
	t.Helper()
	names := func(d string) []string {
		ents, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	na, nb := names(a), names(b)
	if !slices.Equal(na, nb) {
		t.Fatalf("%s has %v, %s has %v", a, na, b, nb)
	}
	for _, n := range na {
		x, _ := os.ReadFile(filepath.Join(a, n))
		y, _ := os.ReadFile(filepath.Join(b, n))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between %s and %s", n, a, b)
		}
	}
}

// sendWindow sets the window of the corpus's window-of-sends query from
// the truth: its 0:10:00 to 0:10:40 when the truth has a send then, else
// the 40 s from the second of the first send after 0:10:00. The
// demo's clock is wall time scaled 1000×, so those 40 s are 40 ms of real
// time; on a loaded machine the demo's processors can sleep through
// them (a 1–5 ms burst's timer firing tens of ms late), or start after
// them, and the window would hold no send. A window the truth holds
// sends in keeps the query's point — a windowed read over each store
// answering as the truth does — and a run with no send after 0:10:00 is
// still too short.
func sendWindow(t *testing.T, qs []testkit.Query, truthDir string) {
	t.Helper()
	h, err := history.Load(truthDir)
	if err != nil {
		t.Fatal(err)
	}
	const from = 10 * int64(time.Minute)
	first := algebra.Forever
	for _, r := range h.Table("SendMessage").Rows {
		if r.From >= from {
			first = min(first, r.From)
		}
	}
	if first == algebra.Forever {
		t.Fatal("no send at or after 0:10:00 in the truth: the run was too short")
	}
	clock := func(ns int64) string {
		s := ns / int64(time.Second)
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	start := first / int64(time.Second) * int64(time.Second)
	const corpus = `("0:10:00" extend "0:10:40")`
	for i := range qs {
		if qs[i].Name != "window-of-sends" {
			continue
		}
		if !strings.Contains(qs[i].Text, corpus) {
			t.Fatalf("window-of-sends no longer asks for %s:\n%s", corpus, qs[i].Text)
		}
		if first > from+40*int64(time.Second) {
			win := fmt.Sprintf("(%q extend %q)", clock(start), clock(start+40*int64(time.Second)))
			qs[i].Text = strings.Replace(qs[i].Text, corpus, win, 1)
			t.Logf("window-of-sends asks for %s: the truth's first send after 0:10:00 is at %s", win, clock(first))
		}
		return
	}
	t.Fatal("no query window-of-sends in the corpus")
}

// TestRecordRoundTrip is the acceptance round trip: a demo run recorded
// with its ground truth; the database exported equals the truth, and
// every query of the os.sdl corpus gives the same result over the
// database, over its export and over the truth.
func TestRecordRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("records for 3 s")
	}
	dir := t.TempDir()
	dbDir, truthDir, expDir := filepath.Join(dir, "db"), filepath.Join(dir, "truth"), filepath.Join(dir, "exported")
	// One recorder writes the database and Parquet files (--parquet): the
	// corpus must answer the same over both.
	pqDir := filepath.Join(dir, "pq")
	code, _, stderr := tqmon(t, "record", "--demo", "--seed", "5", "--duration", "3s", "--db", dbDir, "--truth", truthDir,
		"--parquet", pqDir, "--record-host", "web-1")
	if code == exitIncomplete {
		// A loaded machine's samplers skip ticks and count their samples
		// lost: reported, and the comparison with the truth decides.
		t.Logf("record reports losses: %s", stderr)
	} else if code != 0 {
		t.Fatalf("record: %s", stderr)
	}
	if !strings.Contains(stderr, "recorded ") || !strings.Contains(stderr, "Parquet files") {
		t.Errorf("record's summary: %q", stderr)
	}
	if code, _, stderr := tqmon(t, "export", "--db", dbDir, "--out", expDir); code != 0 {
		t.Fatalf("export: %s", stderr)
	}
	// The recording's observation reads back: each relation watched, the
	// sampled one with its period, none open.
	code, obs, stderr := tqmon(t, "query", "--db", dbDir, "--format", "csv", "--time-format", "ns",
		"-e", "range of o is Observed retrieve (o.Relation, o.Period)")
	if code != 0 {
		t.Fatalf("query --db over Observed: %s", stderr)
	}
	for _, rel := range []string{"Process", "SendMessage", "RunningOn", "Waiting"} {
		if !strings.Contains(obs, "\n"+rel+",") {
			t.Errorf("no Observed tuple for %s:\n%s", rel, obs)
		}
	}
	if strings.Contains(obs, "forever") || !regexp.MustCompile(`\nRunningOn,[1-9]`).MatchString(obs) {
		t.Errorf("Observed:\n%s", obs)
	}
	// The export carries the recording's observation (Observed.csv, and
	// Lost.csv when packets were lost): the truth, complete, has none.
	// Answers over the database and its export are cut at the recorded
	// gaps; so are the truth's, given them.
	if obs, err := os.ReadFile(filepath.Join(expDir, "Observed.csv")); err != nil || !strings.Contains(string(obs), "SendMessage") {
		t.Errorf("the export's Observed.csv: %q (%v)", obs, err)
	}
	os.Remove(filepath.Join(expDir, "Observed.csv"))
	lost := filepath.Join(expDir, "Lost.csv")
	lostText, err := os.ReadFile(lost)
	if err == nil {
		if code != exitIncomplete {
			t.Errorf("a complete recording exports losses:\n%s", lostText)
		}
		os.Remove(lost)
	}
	sameDirs(t, expDir, truthDir)
	if lostText != nil {
		for _, d := range []string{expDir, truthDir} {
			if err := os.WriteFile(filepath.Join(d, "Lost.csv"), lostText, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	qs := testkit.ReadCorpus(t, filepath.Join(root, "testdata", "store", "queries.tq"))
	if len(qs) < 20 {
		t.Fatalf("the corpus has %d queries", len(qs))
	}
	sendWindow(t, qs, truthDir)
	// The whole corpus in one run per source: results come one table per
	// retrieve, separated by blank lines.
	args := []string{"--format", "csv", "--time-format", "ns"}
	var names []string
	for _, q := range qs {
		args = append(args, "-e", q.Text)
		for range strings.Count(q.Text, "retrieve") {
			names = append(names, q.Name)
		}
	}
	run := func(src ...string) []string {
		code, out, stderr := tqmon(t, append(append([]string{"query"}, src...), args...)...)
		if code != 0 {
			t.Fatalf("query %v: %s", src, stderr)
		}
		return strings.Split(out, "\n\n")
	}
	overDB, overExp, overTruth := run("--db", dbDir), run("--history", expDir), run("--history", truthDir)
	overPQ := run("--parquet", pqDir)
	if len(overTruth) != len(names) {
		t.Fatalf("%d results for %d retrieves", len(overTruth), len(names))
	}
	empty := map[string]bool{}
	for i := range overTruth {
		if overDB[i] != overTruth[i] || overExp[i] != overTruth[i] || overPQ[i] != overTruth[i] {
			t.Errorf("%s: over the database, the export, Parquet and the truth:\n%s\n%s\n%s\n%s", names[i], overDB[i], overExp[i], overPQ[i], overTruth[i])
		}
		if strings.Count(strings.TrimSpace(overTruth[i]), "\n") == 0 {
			empty[names[i]] = true
		}
	}
	if len(empty) > 0 {
		t.Errorf("no results for %v: the run was too short", empty)
	}
}

// TestQueryDBEqualsHistory: the differential, rule and timeslice corpora
// over random histories imported into databases: query --db gives what
// query --history gives.
func TestQueryDBEqualsHistory(t *testing.T) {
	spec := filepath.Join(root, "testdata", "differential", "spec.sdl")
	text, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := history.LoadSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	var qs []testkit.Query
	for _, f := range []string{"queries.tq", "rules.tq", "timeslice.tq"} {
		qs = append(qs, testkit.ReadCorpus(t, filepath.Join(root, "testdata", "differential", f))...)
	}
	for seed := uint64(0); seed < 3; seed++ {
		cfg := histgen.DefaultConfig(seed)
		cfg.Tuples = 15
		h := histgen.Random(cat, cfg)
		dir := t.TempDir()
		hist, dbDir := filepath.Join(dir, "h"), filepath.Join(dir, "db")
		if err := history.Write(hist, h, string(text), "spec.sdl"); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := tqmon(t, "import", "--history", hist, "--db", dbDir); code != 0 {
			t.Fatalf("import: %s", stderr)
		}
		for _, q := range qs {
			args := []string{"-e", q.Text, "--format", "csv", "--time-format", "ns"}
			c1, overDB, e1 := tqmon(t, append([]string{"query", "--db", dbDir}, args...)...)
			c2, overHist, e2 := tqmon(t, append([]string{"query", "--history", hist}, args...)...)
			if c1 != c2 || overDB != overHist || e1 != e2 {
				t.Fatalf("seed %d %s: --db exit %d\n%s%s--history exit %d\n%s%s", seed, q.Name, c1, overDB, e1, c2, overHist, e2)
			}
		}
	}
}

// TestStoreCommandErrors: foreign, damaged and missing databases, and bad
// flags, give clear errors and usage exit status.
func TestStoreCommandErrors(t *testing.T) {
	dir := t.TempDir()
	dbDir := filepath.Join(dir, "db")
	if code, _, stderr := tqmon(t, "import", "--history", paper, "--db", dbDir); code != 0 {
		t.Fatalf("import: %s", stderr)
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	q := filepath.Join(paper, "resumed_by_p1.tq")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"query", "--db", paper, "-f", q}, "is not a tqmon database"},
		{[]string{"query", "--db", empty, "-f", q}, "it is empty"},
		{[]string{"query", "--db", filepath.Join(dir, "nope"), "-f", q}, "no database at"},
		{[]string{"query", "--db", dbDir, "--history", paper, "-f", q}, "give one of --history DIR, --db DB, --parquet DIR or --connect ADDR"},
		{[]string{"replay", "--db", paper, "-f", q}, "is not a tqmon database"},
		{[]string{"replay", "--db", dbDir, "-f", q, "--display", filepath.Join(dir, "nope.display")}, "display spec:"},
		{[]string{"replay", "--db", dbDir, "-f", q, "--max", "--speed", "2"}, "not both"},
		{[]string{"replay", "--db", dbDir, "-f", q, "--from", "soon"}, "--from: bad time"},
		{[]string{"export", "--db", paper, "--out", filepath.Join(dir, "x")}, "is not a tqmon database"},
		{[]string{"export", "--db", dbDir, "--out", paper}, "is not empty"},
		{[]string{"import", "--history", paper, "--db", dbDir}, "record into a new directory"},
		{[]string{"import", "--history", paper, "--db", paper}, "is not empty"},
		{[]string{"record", "--db", filepath.Join(dir, "r")}, "exactly one of --demo"},
		{[]string{"record", "--kernel", "--db", filepath.Join(dir, "r"), "-c"}, "-c needs a command"},
		{[]string{"record", "--demo", "--db", filepath.Join(dir, "r"), "--relations", "Nope"}, "no relation Nope"},
		{[]string{"record", "--demo", "--db", dbDir}, "record into a new directory"},
		{[]string{"record", "--connect", "x", "--db", filepath.Join(dir, "r"), "--truth", dir}, "--truth needs --demo"},
		{[]string{"record", "--demo"}, "record needs --db DB or --parquet DIR"},
		{[]string{"record", "--demo", "--parquet", paper}, "is not empty"},
		{[]string{"record", "--demo", "--parquet", filepath.Join(dir, "r"), "--relations", "Nope"}, "no relation Nope"},
		{[]string{"record", "--demo", "--parquet", filepath.Join(dir, "r"), "--parquet-every", "0s"}, "--parquet-every must be positive"},
		{[]string{"record", "--from-journal", "nats://127.0.0.1:1", "--record-host", "h"}, "needs --parquet DIR"},
		{[]string{"record", "--from-journal", "nats://127.0.0.1:1", "--demo", "--parquet", filepath.Join(dir, "r")}, "give no live source"},
		{[]string{"query", "--parquet", paper, "-f", q}, "no Parquet recording"},
		{[]string{"query", "--db", dbDir, "-e", "range of p is Process retrieve (p.Process)", "--record", filepath.Join(dir, "out")}, "name retrieve 1"},
	} {
		code, _, stderr := tqmon(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("tqmon %s: exit %d, %q; want exit 2 saying %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r")); err == nil {
		t.Error("a refused recording left a database behind")
	}
}

// TestQueryRecord: query --record stores named results, as they are
// produced live or computed over a history or a database, in a new
// database or beside the relations of the one queried.
func TestQueryRecord(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	q := filepath.Join(paper, "resumed_by_p1.tq")
	code, want, stderr := tqmon(t, "query", "--history", paper, "-f", q, "--format", "csv", "--record", out)
	if code != 0 {
		t.Fatalf("query --record: %s", stderr)
	}
	code, got, stderr := tqmon(t, "query", "--db", out, "-e", "range of r is ResumedbyP1 retrieve (r.Process) valid at r", "--format", "csv")
	if code != 0 || got != want {
		t.Fatalf("the recorded result reads back as\n%s%s\nwant\n%s", got, stderr, want)
	}
	// Into the database queried, beside its primitive relations.
	dbDir := filepath.Join(dir, "db")
	if code, _, stderr := tqmon(t, "import", "--history", paper, "--db", dbDir); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := tqmon(t, "query", "--db", dbDir, "-f", q, "--record", dbDir); code != 0 {
		t.Fatal(stderr)
	}
	code, got, stderr = tqmon(t, "query", "--db", dbDir, "-e", `range of r is ResumedbyP1
range of s is SendMessage
retrieve (r.Process, s.Mailbox) valid at r where s.Process = "P1" when s precede r`, "--format", "csv")
	if code != 0 || !strings.Contains(got, "P2,") {
		t.Fatalf("querying the recorded result with the primitives: %s%s", got, stderr)
	}
	if code, _, stderr := tqmon(t, "query", "--db", dbDir, "-f", q, "--record", dbDir); code != exitUsage || !strings.Contains(stderr, "relation ResumedbyP1 is already defined") {
		t.Errorf("recording a result twice: exit %d %s", code, stderr)
	}
}

// TestReplay: a replay at --max gives the results the query gives over the
// database; --from/--to replay the tuples valid in between; a paced replay
// takes the recorded time at its speed.
func TestReplay(t *testing.T) {
	dir := t.TempDir()
	dbDir := filepath.Join(dir, "db")
	if code, _, stderr := tqmon(t, "import", "--history", paper, "--db", dbDir); code != 0 {
		t.Fatal(stderr)
	}
	q := filepath.Join(paper, "resumed_by_p1.tq")
	_, want, _ := tqmon(t, "query", "--db", dbDir, "-f", q, "--format", "csv")
	code, got, stderr := tqmon(t, "replay", "--db", dbDir, "-f", q, "--format", "csv", "--max", "--stats")
	if code != 0 || !slices.Equal(sortedRows(got), sortedRows(want)) || len(sortedRows(want)) == 0 {
		t.Fatalf("replay --max:\n%s%s\nwant\n%s", got, stderr, want)
	}
	if !strings.Contains(stderr, "blocks read:") {
		t.Errorf("replay --stats: %s", stderr)
	}
	states := `range of p is Process retrieve (p.Process, p.State)`
	_, slice, _ := tqmon(t, "query", "--db", dbDir, "-e", states+` when p overlap ("2:00:00" extend "2:30:00")`, "--format", "csv")
	code, got, stderr = tqmon(t, "replay", "--db", dbDir, "-e", states, "--from", "2:00:00", "--to", "2:30:00", "--max", "--format", "csv")
	if code != 0 || !slices.Equal(sortedRows(got), sortedRows(slice)) || len(sortedRows(slice)) == 0 {
		t.Fatalf("replay --from --to:\n%s%s\nwant\n%s", got, stderr, slice)
	}
	// The paper's history spans about 3h; at 30000× that is ≈ 0.36 s.
	start := time.Now()
	code, _, stderr = tqmon(t, "replay", "--db", dbDir, "-f", q, "--speed", "30000")
	if code != 0 {
		t.Fatal(stderr)
	}
	var d *db.DB
	d, err := db.Open(dbDir, db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	s, e, _ := d.Extent()
	d.Close()
	if took, min := time.Since(start), time.Duration(float64(e-s)/30000); took < min {
		t.Errorf("replay at 30000× took %v, less than the recorded %v at that speed", took, min)
	}
}

// serveDemoSubject runs the paper's system in this process, recording its
// ground truth, and serves it on sock until the test ends; ready is closed
// when a monitor's session is ready.
func serveDemoSubject(t *testing.T, sock string) (*demo.SubjectClock, *truth.Recorder, *resident.Resident, <-chan struct{}) {
	t.Helper()
	cat, err := subject.DemoCatalog()
	if err != nil {
		t.Fatal(err)
	}
	clock := demo.NewClock(1000)
	rec := truth.New(cat, 0, 0)
	res := resident.New(ossensors.Spec(), demo.Options(clock, rec))
	hello := res.Hello()
	rec.SetClock(hello.MonoBase, hello.WallBase)
	sessions, ready := subject.LeaseSessions(res)
	srv, err := transport.NewServer(sessions, transport.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := transport.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return clock, rec, res, ready
}

// TestRecordKilled: tqmon record killed with SIGKILL leaves a database that
// opens, holds every tuple synced before the kill, and reports the
// intervals in progress at the kill as open.
func TestRecordKilled(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	sock, dbDir := filepath.Join(dir, "s.sock"), filepath.Join(dir, "db")
	clock, rec, res, ready := serveDemoSubject(t, sock)
	cmd := exec.Command(bin, "record", "--connect", sock, "--db", dbDir, "--sync", "50ms", "-v")
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the recorder did not connect")
	}
	ctx, cancel := context.WithCancel(context.Background())
	running := make(chan struct{})
	go func() {
		defer close(running)
		demo.New(ossensors.New(res), demo.DefaultConfig(6)).Run(ctx)
	}()
	// Kill after a few syncs with data.
	lines := bufio.NewScanner(errPipe)
	var synced algebra.Time
	syncs := 0
	for syncs < 6 && lines.Scan() {
		l := lines.Text()
		i := strings.Index(l, " through ")
		if !strings.HasPrefix(l, "synced ") || i < 0 {
			continue
		}
		tm, err := algebra.ParseTime(l[i+len(" through "):])
		if err != nil {
			t.Fatalf("sync line %q: %v", l, err)
		}
		if tm > synced {
			synced = tm
			syncs++
		}
	}
	if syncs < 6 {
		t.Fatalf("only %d syncs reported", syncs)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	cancel()
	<-running
	stop := clock.Stop()
	res.Close()
	want := rec.History(stop)

	d, err := db.Open(dbDir, db.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("reopening after the kill: %v", err)
	}
	got, err := d.History(nil)
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got.Window == nil || got.Window.To < synced {
		t.Fatalf("window %v: the database does not reach the last sync reported (%d)", got.Window, synced)
	}
	through := got.Window.To
	openAtKill := 0
	cat := want.Catalog
	period := cat.ClockPeriod
	for _, r := range cat.Relations {
		type key struct {
			vals string
			from algebra.Time
		}
		truthRows := map[key]algebra.Tuple{}
		for _, row := range want.Table(r.Name).Rows {
			truthRows[key{fmt.Sprint(row.Vals), row.From}] = row
		}
		stored := map[key]bool{}
		for _, row := range got.Table(r.Name).Rows {
			k := key{fmt.Sprint(row.Vals), row.From}
			stored[k] = true
			tr, ok := truthRows[k]
			switch {
			case !ok:
				t.Errorf("%s: stored %v [%d, %d) is no tuple of the truth", r.Name, row.Vals, row.From, row.To)
			case row.To == tr.To:
			case row.To == algebra.Forever && tr.To > through:
				openAtKill++ // in progress at the kill: open
			default:
				t.Errorf("%s: stored %v [%d, %d), truth [%d, %d)", r.Name, row.Vals, row.From, row.To, tr.From, tr.To)
			}
		}
		for k, tr := range truthRows {
			// What the recorder had been told by the last sync it
			// reported: events and begins up to then (a sampled tuple
			// is told at its first tick, a traced-then-disabled one at
			// its end).
			told := tr.From
			switch r.Strategy.Kind {
			case algebra.Sampled:
				told = algebra.FirstTick(period, tr.From)
			case algebra.TracedThenDisabled:
				told = tr.To
			}
			if told <= synced && !stored[k] {
				t.Errorf("%s: %v [%d, %d), synced by %d, is missing", r.Name, tr.Vals, tr.From, tr.To, synced)
			}
		}
	}
	if openAtKill == 0 {
		t.Error("no interval in progress at the kill reads back as open")
	}
	// The command line reads it too.
	if code, out, stderr := tqmon(t, "query", "--db", dbDir, "-e", "range of p is Process retrieve (p.Process, p.State)", "--format", "csv"); code != 0 || strings.Count(out, "\n") < 10 {
		t.Errorf("query after the kill: %d %s", code, stderr)
	}
}

// TestRecordRetain: record --retain keeps the last stretch of the
// recording: the window starts late, and nothing ending before it is kept.
func TestRecordRetain(t *testing.T) {
	if testing.Short() {
		t.Skip("records for 1 s")
	}
	dir := t.TempDir()
	dbDir := filepath.Join(dir, "db")
	if code, _, stderr := tqmon(t, "record", "--demo", "--duration", "1s", "--db", dbDir, "--retain", "5m"); code != 0 {
		t.Fatal(stderr)
	}
	d, err := db.Open(dbDir, db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	h, err := d.History(nil)
	if err != nil {
		t.Fatal(err)
	}
	// 1 s of the demo is about 1000 subject seconds; 5 minutes are kept
	// (from a checkpoint at most that much earlier).
	if h.Window == nil || h.Window.From < 60*1e9 || h.Window.To-h.Window.From < 5*60*1e9 {
		t.Fatalf("window %v", h.Window)
	}
	old := 0
	for _, tab := range h.Tables {
		for _, row := range tab.Rows {
			if row.To < h.Window.From-10*60*1e9 {
				old++
			}
		}
	}
	if old > 0 {
		t.Errorf("%d tuples ended long before the retained window", old)
	}
}

// TestQueryDBExplain: --explain over a database shows the scan windows.
func TestQueryDBExplain(t *testing.T) {
	dbDir := filepath.Join(t.TempDir(), "db")
	if code, _, stderr := tqmon(t, "import", "--history", paper, "--db", dbDir); code != 0 {
		t.Fatal(stderr)
	}
	code, out, stderr := tqmon(t, "query", "--db", dbDir, "--explain", "-e", `range of p is Process retrieve (p.Process) when p overlap "1:00:00"`)
	if code != 0 || !strings.Contains(out, "scan-window: ") || !strings.Contains(out, "reads Process through @[1:00:00, 1:00:00]") {
		t.Errorf("explain: %s%s", out, stderr)
	}
}

// TestQueryConnectRecord: query --connect --record stores results as they
// are produced live; they equal the query's over the ground truth.
func TestQueryConnectRecord(t *testing.T) {
	dir := t.TempDir()
	sock, out := filepath.Join(dir, "s.sock"), filepath.Join(dir, "out")
	clock, rec, res, ready := serveDemoSubject(t, sock)
	q := filepath.Join(paper, "resumed_by_p1.tq")
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, o, e := tqmon(t, "query", "--connect", sock, "-f", q, "--record", out, "--format", "csv", "--time-format", "ns")
		done <- result{code, o, e}
	}()
	select {
	case <-ready:
	case r := <-done:
		t.Fatalf("the monitor ended: %s", r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	demo.New(ossensors.New(res), demo.DefaultConfig(8)).Run(ctx)
	stop := clock.Stop()
	res.Close()
	r := <-done
	if r.code != 0 {
		t.Fatalf("query --connect --record: %s", r.stderr)
	}
	truthDir := filepath.Join(dir, "truth")
	if err := history.Write(truthDir, rec.History(stop), ossensors.SDL, "os.sdl"); err != nil {
		t.Fatal(err)
	}
	_, want, _ := tqmon(t, "query", "--history", truthDir, "-f", q, "--format", "csv", "--time-format", "ns")
	code, got, stderr := tqmon(t, "query", "--db", out, "-e", "range of r is ResumedbyP1 retrieve (r.Process) valid at r", "--format", "csv", "--time-format", "ns")
	if code != 0 || !slices.Equal(sortedRows(got), sortedRows(want)) || len(sortedRows(want)) == 0 {
		t.Errorf("recorded live\n%s%s\nover the truth\n%s", got, stderr, want)
	}
}
