package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// recordBoth records a short demo into a database and Parquet files at
// once (one recorder, store/record.Tee) and returns their paths.
func recordBoth(t *testing.T) (db, pq string) {
	t.Helper()
	dir := t.TempDir()
	db, pq = filepath.Join(dir, "run.db"), filepath.Join(dir, "pq")
	if code, _, errs := tqmon(t, "record", "--demo", "--seed", "5", "--duration", "1s", "--db", db, "--parquet", pq,
		"--record-host", "web-1", "--allow-loss"); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	return db, pq
}

// TestReplayParquet: replay --parquet plays a Parquet recording through
// the one replay player, and prints what replay --db prints over the
// same recording — whole, and through a --from/--to window (which reads
// only the files the window needs).
func TestReplayParquet(t *testing.T) {
	db, pq := recordBoth(t)
	queries := []string{paperQuery, filepath.Join(root, "testdata", "tquel", "02-send-to-waiter.tq")}
	for _, window := range [][]string{nil, {"--from", "0:05:00", "--to", "0:10:00"}} {
		for _, q := range queries {
			args := append([]string{"--max", "-f", q, "--format", "csv", "--time-format", "ns"}, window...)
			code, overDB, errs := tqmon(t, append([]string{"replay", "--db", db}, args...)...)
			if code != 0 || strings.Count(overDB, "\n") < 2 {
				t.Fatalf("replay --db %v: exit %d, %d lines\n%s", window, code, strings.Count(overDB, "\n"), errs)
			}
			code, overPQ, errs := tqmon(t, append([]string{"replay", "--parquet", pq}, args...)...)
			if code != 0 || overPQ != overDB {
				t.Errorf("replay --parquet %s %v: exit %d\n%s%s\nreplay --db printed\n%s", filepath.Base(q), window, code, overPQ, errs, overDB)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "-e", sendsQuery}, "replay needs --db DB or --parquet DIR"},
		{[]string{"replay", "--db", db, "--parquet", pq, "-e", sendsQuery}, "give --db DB or --parquet DIR, not both"},
		{[]string{"replay", "--parquet", filepath.Join(pq, "nope"), "-e", sendsQuery}, "nope"},
	} {
		if code, _, errs := tqmon(t, c.args...); code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, errs, exitUsage, c.want)
		}
	}
}

// TestViewParquet: view --parquet plays a Parquet recording into the
// display; played to the end, its queries' results (served as
// Prometheus counters: every send counted per sender and mailbox) are
// what replay --db prints over the same recording.
func TestViewParquet(t *testing.T) {
	db, pq := recordBoth(t)
	want := sendsCounted(t, "replay", "--db", db, "--max")
	bin := binary(t)
	addr := freeAddr(t)
	url := "http://" + addr + "/metrics"
	tm := startTerm(t, bin, "view", "--parquet", pq, "--display", paperSpec, "-f", paperQuery, "-e", sendsQuery,
		"--speed", "1000000", "--prometheus", addr)
	got := scrapeUntil(t, tm, url, want, 60*time.Second)
	for k, w := range want {
		if got[k] != w {
			t.Errorf("view --parquet served %s %v; replay --db counts %v", k, got[k], w)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok && strings.HasPrefix(k, "tqmon_Sends_events_total{") {
			t.Errorf("view --parquet served %s %v; replay --db has none", k, v)
		}
	}
	tm.typeText("q")
	if code := tm.exit(20 * time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, tm.all())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"view", "--display", paperSpec}, "view needs --history DIR (a directory with a .sdl file and CSV files) or --parquet DIR"},
		{[]string{"view", "--history", paper, "--parquet", pq, "--display", paperSpec}, "give --history DIR or --parquet DIR, not both"},
	} {
		if code, _, errs := tqmon(t, c.args...); code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, errs, exitUsage, c.want)
		}
	}
}
