package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The scale: the demo subject at --scale 400000 (a tick of its
// RunningOn sampler due every 2.5 µs of real time), monitored by a
// separate process sampling RunningOn, beside an unmonitored twin run at
// the same time. Before the bounds, such a subject froze (its drain
// catching up sampler ticks for ever, entity updates spinning under the
// resident's lock): a 10 s run still running at 46 s. Bounds asserted:
//
//   - the monitored subject's rate (running bursts a second, which it
//     reports) is at least scaleMinRate of its twin's;
//   - its 3 s run ends within scaleMaxRun of the monitor's start;
//   - its RSS grows by less than scaleMaxRSS over the run;
//   - the monitor is served (rows), and exits 0 or 3 with its losses
//     reported (the sampler, far behind at this scale, skips ticks and
//     says what it lost).
const (
	scaleMinRate = 0.9
	scaleMaxRun  = 6 * time.Second
	scaleMaxRSS  = 256 << 20
)

func TestDemoSubjectAtScale400000(t *testing.T) {
	bin := binary(t)
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("reads the subject's RSS from /proc")
	}
	dir := t.TempDir()
	sock, twinSock := filepath.Join(dir, "subject.sock"), filepath.Join(dir, "twin.sock")
	subjectArgs := []string{"demo", "--subject", "--wait-limit", "0", "--scale", "400000", "--duration", "3s"}
	var subjErr, twinErr, monErr strings.Builder
	subj := exec.Command(bin, append(subjectArgs, "--listen", sock)...)
	subj.Stderr = &subjErr
	if err := subj.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { subj.Process.Kill(); subj.Wait() })
	waitFor(t, "the subject's socket", 10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil })
	rss0 := rss(t, subj.Process.Pid)

	start := time.Now()
	mon := exec.Command(bin, "query", "--connect", sock, "--format", "csv",
		"-e", `range of r is RunningOn retrieve (r.Process, r.Processor)`)
	mon.Stderr = &monErr
	rows := 0
	out, err := mon.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mon.Process.Kill() })
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			rows++
		}
	}()
	twin := exec.Command(bin, append(subjectArgs, "--listen", twinSock, "--wait=false")...)
	twin.Stderr = &twinErr
	if err := twin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { twin.Process.Kill(); twin.Wait() })

	// The subject's RSS, every 50 ms until it ends.
	peak := rss0
	ended := make(chan error, 1)
	go func() { ended <- subj.Wait() }()
	var subjErrV error
	for done := false; !done; {
		select {
		case subjErrV = <-ended:
			done = true
		case <-time.After(50 * time.Millisecond):
			peak = max(peak, rss(t, subj.Process.Pid))
			if time.Since(start) > 4*scaleMaxRun {
				t.Fatalf("the subject still runs after %v (its run is 3 s)", time.Since(start))
			}
		}
	}
	took := time.Since(start)
	if subjErrV != nil {
		t.Fatalf("subject: %v\n%s", subjErrV, subjErr.String())
	}
	monExit := exitCode(mon.Wait())
	<-read
	if err := twin.Wait(); err != nil {
		t.Fatalf("twin: %v\n%s", err, twinErr.String())
	}
	rate, twinRate := ranRate(t, "subject", subjErr.String()), ranRate(t, "twin", twinErr.String())
	t.Logf("subject %.0f bursts/s, twin %.0f (%.2f); run ended %v after the monitor started; RSS %d → %d MB; monitor: exit %d, %d rows",
		rate, twinRate, rate/twinRate, took.Round(time.Millisecond), rss0>>20, peak>>20, monExit, rows)
	if rate < scaleMinRate*twinRate {
		t.Errorf("the monitored subject ran %.0f bursts/s, under %.0f%% of its twin's %.0f", rate, 100*scaleMinRate, twinRate)
	}
	if took > scaleMaxRun {
		t.Errorf("the 3 s run ended %v after the monitor started (bound %v)", took, scaleMaxRun)
	}
	if peak-rss0 > scaleMaxRSS {
		t.Errorf("the subject's RSS grew %d MB (bound %d MB)", (peak-rss0)>>20, scaleMaxRSS>>20)
	}
	switch {
	case rows < 2:
		t.Errorf("the monitor got %d lines:\n%s", rows, monErr.String())
	case monExit == exitIncomplete && !strings.Contains(monErr.String(), "lost "):
		t.Errorf("the monitor exited %d without reporting its losses:\n%s", monExit, monErr.String())
	case monExit != 0 && monExit != exitIncomplete:
		t.Errorf("the monitor exited %d:\n%s", monExit, monErr.String())
	}
}

// rss returns a process's resident set size in bytes (0 once it ended).
func rss(t *testing.T, pid int) uint64 {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(data)
	if m == nil {
		return 0
	}
	kb, _ := strconv.ParseUint(string(m[1]), 10, 64)
	return kb << 10
}

// ranRate reads the rate a demo subject reports as it stops.
func ranRate(t *testing.T, who, stderr string) float64 {
	t.Helper()
	m := regexp.MustCompile(`ran \d+ bursts in \S+ \(([\d.]+)/s\)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("%s reports no rate:\n%s", who, stderr)
	}
	r, _ := strconv.ParseFloat(m[1], 64)
	return r
}
