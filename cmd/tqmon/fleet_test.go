package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
)

// startServe runs tqmon serve on a free loopback port, with more flags
// if given, and returns its URL.
func startServe(t *testing.T, bin string, flags ...string) string {
	t.Helper()
	srv := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, flags...)...)
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Process.Signal(os.Interrupt)
		srv.Wait()
	})
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(url, "nats://127.0.0.1:") && !strings.HasPrefix(url, "tls://127.0.0.1:") {
		t.Fatalf("tqmon serve printed %q (%v)", url, err)
	}
	return strings.TrimSpace(url)
}

// TestFleetTwoHosts: tqmon serve, two demo hosts joining it and a third
// the glob leaves out; the paper's queries (ResumedbyP1 asking for
// web-1's P1) and a by-Host aggregate over --nats --hosts 'web-*' are the
// queries over the fleet's truth: the two web hosts' truths, each tuple
// with its Host and host-qualified entities (two hosts' P1 are two).
func TestFleetTwoHosts(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	url := startServe(t, bin)
	qs := fleetQueries()
	var hosts []*exec.Cmd
	truths := map[string]string{}
	for i, h := range []string{"web-1", "web-2", "db-1"} {
		tr := filepath.Join(dir, "truth-"+h)
		cmd := exec.Command(bin, "demo", "--subject", "--nats", url, "--host", h, "--duration", "700ms",
			"--seed", fmt.Sprint(30+i), "--truth", tr)
		var serr strings.Builder
		cmd.Stderr = &serr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		waitFor(t, h+" joining", 10*time.Second, func() bool { return strings.Contains(serr.String(), "serving on") })
		hosts = append(hosts, cmd)
		if strings.HasPrefix(h, "web-") {
			truths[h] = tr
		}
	}
	// A second web-1 is refused, naming the host.
	if out, err := exec.Command(bin, "demo", "--subject", "--nats", url, "--host", "web-1").CombinedOutput(); err == nil || !strings.Contains(string(out), `"web-1"`) {
		t.Errorf("a second web-1: %v\n%s", err, out)
	}
	mon := exec.Command(bin, append(append([]string{"query", "--nats", url, "--hosts", "web-*"}, qs...), "--format", "csv", "--time-format", "ns", "--stats")...)
	var monErr strings.Builder
	mon.Stderr = &monErr
	out, err := mon.Output()
	if err != nil {
		t.Fatalf("monitor: %v\n%s", err, monErr.String())
	}
	// db-1 was left out: nobody asked it to start (it waits for a monitor).
	hosts[2].Process.Kill()
	for _, h := range hosts[:2] {
		if err := h.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "truth-db-1")); err == nil {
		t.Error("db-1 ran: the glob did not leave it out")
	}
	sameAsFleetTruth(t, string(out), dir, truths, qs...)
}

// fleetQueries are the -f flags of the paper's queries over a fleet and
// a by-Host aggregate.
func fleetQueries() []string {
	return []string{"-f", filepath.Join(root, "testdata", "fleet", "resumed_by_p1.tq"),
		"-f", filepath.Join(root, "testdata", "paper", "queue_length.tq"),
		"-f", filepath.Join(root, "testdata", "paper", "send_to_unblock.tq"),
		"-f", filepath.Join(root, "testdata", "fleet", "by_host.tq")}
}

// TestKernelResidentOnNATS: the kernel resident joins a fleet as a host
// and a monitor reaches it by name. Needs root and BPF (kerneltest.Need
// skips, saying so, otherwise).
func TestKernelResidentOnNATS(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	url := startServe(t, bin)
	startResident(t, bin, "as host k-1", "--nats", url, "--host", "k-1")
	getppidRowsOf(t, bin, "k-1", "--nats", url, "--hosts", "k-*")
	kerneltest.WaitPrograms(t, "nothing attached once the monitor left", func(p []string) bool { return len(p) == 0 })
}

// TestFleetHostKilledIsLost: a host that dies (SIGKILL: no end frame, no
// heartbeat) is reported lost after the 10 s silence bound, and the query
// exits 3, as a lost --connect session does.
func TestFleetHostKilledIsLost(t *testing.T) {
	bin := binary(t)
	url := startServe(t, bin)
	host := exec.Command(bin, "demo", "--subject", "--nats", url, "--host", "web-9", "--duration", "60s")
	var serr strings.Builder
	host.Stderr = &serr
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer host.Process.Kill()
	waitFor(t, "web-9 joining", 10*time.Second, func() bool { return strings.Contains(serr.String(), "serving on") })
	mon := exec.Command(bin, "query", "--nats", url, "--duration", "40s", "--format", "csv",
		"-f", filepath.Join(root, "testdata", "paper", "resumed_by_p1.tq"))
	var monErr strings.Builder
	mon.Stderr = &monErr
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	host.Process.Kill()
	killed := time.Now()
	err := mon.Wait()
	took := time.Since(killed)
	if code := exitCode(err); code != 3 || !strings.Contains(monErr.String(), "session lost") || !strings.Contains(monErr.String(), "web-9") {
		t.Fatalf("exit %d after the host died; stderr:\n%s", code, monErr.String())
	}
	if took < 9*time.Second || took > 30*time.Second {
		t.Errorf("lost %v after the host died; the silence bound is 10 s", took)
	}
}

// TestFleetHostStopped: of two demo hosts, web-2 is killed mid-run. After
// the silence bound (--silence 2s) its session is lost: the run goes on
// with web-1, whose process states equal its truth, says where web-2's
// part stops being observed (--stats) and exits 3 (incomplete). A silence
// under two heartbeats is refused.
func TestFleetHostStopped(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	url := startServe(t, bin)
	if code, _, stderr := tqmon(t, "query", "--nats", url, "--silence", "1s", "-e", "range of p is Process retrieve (p.Process)"); code != 2 || !strings.Contains(stderr, "under two heartbeats") {
		t.Errorf("--silence 1s: exit %d, %s", code, stderr)
	}
	tr := filepath.Join(dir, "truth-web-1")
	var hosts []*exec.Cmd
	for _, h := range []struct{ name, dur string }{{"web-1", "5s"}, {"web-2", "60s"}} {
		args := []string{"demo", "--subject", "--nats", url, "--host", h.name, "--duration", h.dur, "--seed", "5"}
		if h.name == "web-1" {
			args = append(args, "--truth", tr)
		}
		cmd := exec.Command(bin, args...)
		var serr strings.Builder
		cmd.Stderr = &serr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		waitFor(t, h.name+" joining", 10*time.Second, func() bool { return strings.Contains(serr.String(), "serving on") })
		hosts = append(hosts, cmd)
	}
	q := filepath.Join(dir, "states.tq")
	os.WriteFile(q, []byte("range of p is Process retrieve (p.Process, p.State, p.Host)\n"), 0o644)
	mon := exec.Command(bin, "query", "--nats", url, "--silence", "2s", "-f", q, "--format", "csv", "--time-format", "ns", "--stats")
	var monErr strings.Builder
	mon.Stderr = &monErr
	var monOut strings.Builder
	mon.Stdout = &monOut
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	hosts[1].Process.Kill()
	killedAt := time.Now()
	err := mon.Wait()
	t.Logf("monitor ended %s after web-2 was killed", time.Since(killedAt))
	if err := hosts[0].Wait(); err != nil {
		t.Fatalf("web-1: %v", err)
	}
	stderr := monErr.String()
	if code := exitCode(err); code != 3 || !strings.Contains(stderr, "web-2") || !strings.Contains(stderr, "on web-2 up to") {
		t.Fatalf("exit %d after web-2 died; stderr:\n%s", code, stderr)
	}
	var web1 strings.Builder
	for _, line := range strings.SplitAfter(monOut.String(), "\n") {
		if strings.HasPrefix(line, "Process,") || strings.Contains(line, ",web-1,") {
			web1.WriteString(line)
		}
	}
	sameAsFleetTruth(t, web1.String(), dir, map[string]string{"web-1": tr}, "-f", q)
	if t.Failed() {
		t.Logf("monitor stderr:\n%s", stderr)
	}
}

// TestKernelTwoHosts: two kernel residents on this machine joined as
// hosts k-1 and k-2, each asked for a workload of its own (by its
// host-qualified identifier, so each host enables its own only): the
// getppid calls per host are exactly the workloads' (1234 and 2345), and
// no row of one host is the other's. Needs root and BPF.
func TestKernelTwoHosts(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	url := startServe(t, bin)
	startResident(t, bin, "as host k-1", "--nats", url, "--host", "k-1")
	startResident(t, bin, "as host k-2", "--nats", url, "--host", "k-2")
	work := kerneltest.BuildC(t, "../../resident/kernel/testdata/workload.c", true)
	// Each workload waits for a line on stdin, then becomes the workload
	// (exec: the same PID), once the monitor watches.
	calls := map[string]int{"k-1": 1234, "k-2": 2345}
	pids := map[string]int{}
	var gos []io.WriteCloser
	for _, h := range []string{"k-1", "k-2"} {
		w := exec.Command("sh", "-c", fmt.Sprintf("read _; exec %s %d 0 %s", work, calls[h], filepath.Join(t.TempDir(), "cpu")))
		in, _ := w.StdinPipe()
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { w.Process.Kill(); w.Wait() }()
		pids[h] = w.Process.Pid
		gos = append(gos, in)
	}
	mon := exec.Command(bin, "query", "--nats", url, "--hosts", "k-*", "--duration", "4s", "--format", "csv",
		"--param", "a=k-1/"+fmt.Sprint(pids["k-1"]), "--param", "b=k-2/"+fmt.Sprint(pids["k-2"]),
		"-e", `range of s is Syscall retrieve (s.Host, s.Process) where s.Name = "getppid" and (s.Process = $a or s.Process = $b)`)
	var out, serr strings.Builder
	mon.Stdout, mon.Stderr = &out, &serr
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	kerneltest.WaitPrograms(t, "both hosts' Syscall sensors", func(p []string) bool {
		n := 0
		for _, name := range p {
			if strings.HasPrefix(name, "tqm_Syscall") {
				n++
			}
		}
		return n >= 2
	})
	time.Sleep(300 * time.Millisecond) // the enables applied
	for _, in := range gos {
		fmt.Fprintln(in)
		in.Close()
	}
	if err := mon.Wait(); err != nil {
		t.Fatalf("monitor: %v\n%s", err, serr.String())
	}
	got := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		f := strings.Split(l, ",")
		want := qualified(f[0], pids[f[0]])
		if len(f) < 2 || f[1] != want {
			t.Fatalf("a row of host %s for process %s, not %s", f[0], f[1], want)
		}
		got[f[0]]++
	}
	for h, n := range calls {
		if got[h] != n {
			t.Errorf("host %s: %d getppid calls, want %d", h, got[h], n)
		}
	}
}
