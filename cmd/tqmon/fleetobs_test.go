package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFleetRecordReadsBackObserved: a fleet recording (two demo hosts,
// web-2 killed mid-run) reads back — from its database, its Parquet
// files and its export (a history directory) alike — with the run's
// Observed and Lost: the recorded description says it is a fleet's
// (algebra.FleetMarker), so the catalog rebuilt from it gives them their
// Host. Observed holds one tuple per relation and host, web-2's ending
// before web-1's (where it was lost); the three answer alike.
func TestFleetRecordReadsBackObserved(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	url := startServe(t, bin)
	startDemoHost(t, bin, url, "web-1", "--duration", "60s", "--seed", "5")
	web2 := startDemoHost(t, bin, url, "web-2", "--duration", "60s", "--seed", "5")
	db, pq := filepath.Join(dir, "run.db"), filepath.Join(dir, "run.pq")
	rec := exec.Command(bin, "record", "--nats", url, "--silence", "2s", "--relations", "Process,SendMessage",
		"--db", db, "--parquet", pq, "--duration", "8s")
	var recErr strings.Builder
	rec.Stderr = &recErr
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	web2.Process.Kill()
	if code := exitCode(rec.Wait()); code != 3 || !strings.Contains(recErr.String(), "web-2") {
		t.Fatalf("record: exit %d, want 3 (web-2 lost); stderr:\n%s", code, recErr.String())
	}
	observed := "range of o is Observed retrieve (o.Relation, o.Host)"
	lost := "range of l is Lost retrieve (l.Relation, l.Count, l.Host)"
	hist := filepath.Join(dir, "exported")
	if code, _, stderr := tqmon(t, "export", "--db", db, "--out", hist); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	var outs []string
	for _, src := range [][]string{{"--db", db}, {"--parquet", pq}, {"--history", hist}} {
		code, out, stderr := tqmon(t, append([]string{"query"}, append(src, "-e", observed, "--format", "csv", "--time-format", "ns")...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", src, code, stderr)
		}
		outs = append(outs, out)
		if code, _, stderr := tqmon(t, append([]string{"query"}, append(src, "-e", lost)...)...); code != 0 {
			t.Fatalf("%v: Lost: exit %d: %s", src, code, stderr)
		}
	}
	if outs[0] != outs[1] || outs[0] != outs[2] {
		t.Errorf("Observed from the database:\n%s\nfrom the Parquet files:\n%s\nfrom its export:\n%s", outs[0], outs[1], outs[2])
	}
	// Relation,Host,from,to: one per relation and host; web-2's end first.
	ends := map[string]map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(outs[0]), "\n")[1:] {
		f := strings.Split(line, ",")
		if len(f) < 4 {
			t.Fatalf("Observed row %q", line)
		}
		to, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			t.Fatalf("Observed row %q: %v", line, err)
		}
		if ends[f[0]] == nil {
			ends[f[0]] = map[string]int64{}
		}
		if _, dup := ends[f[0]][f[1]]; dup {
			t.Errorf("two Observed tuples of %s on %s", f[0], f[1])
		}
		ends[f[0]][f[1]] = to
	}
	rels := make([]string, 0, len(ends))
	for rel, hs := range ends {
		rels = append(rels, rel)
		if len(hs) != 2 || hs["web-2"] >= hs["web-1"] {
			t.Errorf("Observed %s per host: %v, want web-1 and web-2, web-2 ending first", rel, hs)
		}
	}
	slices.Sort(rels)
	if !slices.Contains(rels, "SendMessage") {
		t.Errorf("Observed relations %v, want SendMessage among them:\n%s", rels, outs[0])
	}
	if t.Failed() {
		t.Logf("record stderr:\n%s", recErr.String())
	}
}

// startDemoHost starts a demo host joining the fleet at url (tqmon demo
// --subject --nats URL --host NAME, then args) and waits until it serves;
// it is killed when the test ends.
func startDemoHost(t *testing.T, bin, url, host string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"demo", "--subject", "--nats", url, "--host", host}, args...)...)
	var serr strings.Builder
	cmd.Stderr = &serr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, host+" joining", 10*time.Second, func() bool { return strings.Contains(serr.String(), "serving on") })
	return cmd
}
