package main

import (
	"encoding/csv"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
	"github.com/tqmon/tqmon/resident/kernel/launch"
)

// placedQuery's answer changes a few times while the workload makes
// thousands of calls: the names its process called first and last in
// order (min and max over the calls so far).
const placedQuery = `range of s is Syscall
retrieve (First = min(s.Name where s.Process = $p for ever), Last = max(s.Name where s.Process = $p for ever))`

// connectedRun runs placedQuery with --connect against `tqmon resident
// --kernel` (with the resident's extra flags) over the workload's calls:
// the workload starts paused and is released once the query's Syscall
// program is attached. It returns the answer's values in order and the
// wire's tuples and bytes (--stats), and whether the run said it was
// placed.
func connectedRun(t *testing.T, bin, work string, calls int, resFlags ...string) (rows []string, tuples, bytes int, placed bool) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "k.sock")
	startResident(t, bin, "serving", append([]string{"--listen", sock}, resFlags...)...)
	cmd, err := launch.Start([]string{work, strconv.Itoa(calls), "0", filepath.Join(t.TempDir(), "cpu")}, launch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.Kill()
	q := exec.Command(bin, "query", "--connect", sock, "--duration", "3s", "--format", "csv", "--stats",
		"--param", "p="+strconv.Itoa(cmd.Pid), "-e", placedQuery)
	var stdout, stderr strings.Builder
	q.Stdout, q.Stderr = &stdout, &stderr
	if err := q.Start(); err != nil {
		t.Fatal(err)
	}
	kerneltest.WaitPrograms(t, "the query's Syscall program", func(p []string) bool { return has(p, "tqm_Syscall_0") })
	time.Sleep(300 * time.Millisecond) // (its enables: set before it is attached, and the margin)
	if err := cmd.Release(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if err := q.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	recs, err := csv.NewReader(strings.NewReader(stdout.String())).ReadAll()
	if err != nil || len(recs) < 2 || recs[0][0] != "First" || recs[0][1] != "Last" {
		t.Fatalf("the answer: %v\n%s", err, stdout.String())
	}
	for _, r := range recs[1:] {
		rows = append(rows, r[0]+","+r[1])
	}
	m := regexp.MustCompile(`wire: (\d+) tuples, (\d+) bytes`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no wire figures in --stats:\n%s", stderr.String())
	}
	tuples, _ = strconv.Atoi(m[1])
	bytes, _ = strconv.Atoi(m[2])
	return rows, tuples, bytes, strings.Contains(stderr.String(), "placed: every operator ran at the resident")
}

// TestKernelPlacedConnect: `tqmon query --connect` to `tqmon resident
// --kernel` runs an aggregate over the kernel's Syscall as a plan
// fragment at the resident: its answer equals the same query's against
// a resident that runs no plans (--no-plans: the aggregate at the
// monitor), and the wire carries its few result tuples (and the
// session's opening snapshot of the live processes), not the workload's
// thousands of calls.
func TestKernelPlacedConnect(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	work := kerneltest.BuildC(t, "../../resident/kernel/testdata/workload.c", true)
	const calls = 20000
	got, pt, pb, placed := connectedRun(t, bin, work, calls)
	want, ut, ub, unplaced := connectedRun(t, bin, work, calls, "--no-plans")
	if !placed || unplaced {
		t.Fatalf("placed: %v and %v, want true and false", placed, unplaced)
	}
	if !slices.Equal(got, want) || len(got) < 2 {
		t.Errorf("placed %q, at the monitor %q", got, want)
	}
	if ut < calls || pt >= calls/4 {
		t.Errorf("wire tuples: placed %d, at the monitor %d, for %d calls", pt, ut, calls)
	}
	t.Logf("%d rows; wire placed %d tuples, %d bytes; at the monitor %d tuples, %d bytes", len(got), pt, pb, ut, ub)
}
