package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
	"github.com/tqmon/tqmon/store/history"
)

// exitCode is a finished command's exit status.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// startSubject starts tqmon demo --subject with args and waits for its
// socket.
func startSubject(t *testing.T, bin, sock string, args ...string) *exec.Cmd {
	t.Helper()
	subj := exec.Command(bin, append([]string{"demo", "--subject", "--listen", sock, "--wait-limit", "0"}, args...)...)
	if err := subj.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { subj.Process.Kill(); subj.Wait() })
	waitFor(t, "the subject's socket", 10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil })
	return subj
}

// TestConnectPausedMonitorExits3: a monitor stopped (SIGSTOP) past its
// lease loses its session; once it runs again it says so on stderr and
// exits 3 — never a quiet end with part of the rows — unless
// --allow-loss.
func TestConnectPausedMonitorExits3(t *testing.T) {
	bin := binary(t)
	for _, allow := range []bool{false, true} {
		sock := filepath.Join(t.TempDir(), "subject.sock")
		startSubject(t, bin, sock, "--duration", "3s")
		args := []string{"query", "--connect", sock, "--lease", "400ms", "--format", "csv",
			"-e", `range of s is SendMessage retrieve (s.Process, s.Mailbox)`}
		if allow {
			args = append(args, "--allow-loss")
		}
		mon := exec.Command(bin, args...)
		var stderr strings.Builder
		mon.Stderr = &stderr
		if err := mon.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		mon.Process.Signal(syscall.SIGSTOP)
		time.Sleep(1500 * time.Millisecond) // past its lease
		mon.Process.Signal(syscall.SIGCONT)
		code := exitCode(mon.Wait())
		want := exitIncomplete
		if allow {
			want = 0
		}
		if code != want || !strings.Contains(stderr.String(), "session lost") || !strings.Contains(stderr.String(), "lease expired") {
			t.Errorf("allow-loss %v: exit %d, want %d; stderr:\n%s", allow, code, want, stderr.String())
		}
	}
}

// TestConnectLateJoinMatchesRestrictedTruth: a monitor that joins a
// running subject answers over what it observed (--stats says from
// when); the same query over the subject's ground truth restricted to
// that observation gives the same rows — counts by state included, which
// would otherwise claim the few processes alive at the join for the time
// before it.
func TestConnectLateJoinMatchesRestrictedTruth(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "subject.sock")
	truthDir := filepath.Join(dir, "truth")
	subj := startSubject(t, bin, sock, "--wait=false", "--duration", "1500ms", "--seed", "6", "--truth", truthDir)
	time.Sleep(500 * time.Millisecond) // the subject runs unwatched
	q := `range of p is Process retrieve (p.State, N = count(p.Process by p.State))`
	mon := exec.Command(bin, "query", "--connect", sock, "--format", "csv", "--time-format", "ns", "--stats", "-e", q)
	var stderr strings.Builder
	mon.Stderr = &stderr
	out, err := mon.Output()
	if err != nil {
		t.Fatalf("monitor: %v\n%s", err, stderr.String())
	}
	if err := subj.Wait(); err != nil {
		t.Fatalf("subject: %v", err)
	}
	m := regexp.MustCompile(`observed Process from (\d+) to`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("--stats gives no observation of Process:\n%s", stderr.String())
	}
	from, _ := strconv.ParseInt(m[1], 10, 64)
	if from <= 0 {
		t.Fatalf("observed from %d: the monitor joined late", from)
	}
	h, err := history.Load(truthDir)
	if err != nil {
		t.Fatal(err)
	}
	restricted := filepath.Join(dir, "restricted")
	if err := history.Write(restricted, remote.Restrict(h, from), ossensors.SDL, "os.sdl"); err != nil {
		t.Fatal(err)
	}
	code, want, serr := tqmon(t, "query", "--history", restricted, "--format", "csv", "--time-format", "ns", "-e", q)
	if code != 0 {
		t.Fatalf("query over the restricted truth: %s", serr)
	}
	_, all, _ := tqmon(t, "query", "--history", truthDir, "--format", "csv", "--time-format", "ns", "-e", q)
	g, w := sortedRows(string(out)), sortedRows(want)
	if len(w) == 0 {
		t.Fatal("no result over the restricted truth")
	}
	if !slices.Equal(g, w) {
		t.Errorf("late live rows\n%s\nrestricted truth rows\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	if slices.Equal(g, sortedRows(all)) {
		t.Error("the whole truth gives the same rows: the subject did nothing before the monitor joined")
	}
}

// TestKernelOverflowExits3: a kernel query whose one-page ring overflows
// reports every loss on stderr as it happens ("lost N Syscall packets
// between T1 and T2"); the packets delivered plus the packets reported
// lost are exactly the packets the kernel's programs produced, and the
// run exits 3. The rows are the packets delivered outside the gaps (the
// rule at gaps drops the events inside one).
func TestKernelOverflowExits3(t *testing.T) {
	kerneltest.Need(t)
	bin := binary(t)
	work := kerneltest.BuildC(t, "../../resident/kernel/testdata/workload.c", true)
	const calls = 200000
	mon := exec.Command(bin, "query", "--kernel", "--ring-bytes", "4096", "--format", "csv", "--stats",
		"-e", `range of s is Syscall retrieve (s.Name) where s.Process = $target`,
		"-c", "--", work, strconv.Itoa(calls), "0", filepath.Join(t.TempDir(), "cpu"))
	var stderr strings.Builder
	mon.Stderr = &stderr
	out, err := mon.Output()
	if code := exitCode(err); code != exitIncomplete {
		t.Fatalf("exit %d (%v), want %d\n%s", code, err, exitIncomplete, stderr.String())
	}
	rows := strings.Split(strings.TrimSpace(string(out)), "\n")[1:]
	getppid := 0
	for _, r := range rows {
		if strings.HasPrefix(r, "getppid,") {
			getppid++
		}
	}
	var reported, lost, produced, packets uint64
	lossLine := regexp.MustCompile(`^tqmon: lost (\d+) Syscall packets between \S+ and \S+$`)
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	for sc.Scan() {
		l := sc.Text()
		if m := lossLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.ParseUint(m[1], 10, 64)
			reported += n
		}
		fmt.Sscanf(l, "lost: %d", &lost)
		fmt.Sscanf(l, "produced Syscall: %d", &produced)
		fmt.Sscanf(l, "packets Syscall: %d", &packets)
	}
	t.Logf("rows %d (getppid %d), reported lost %d, lost %d, produced %d", len(rows), getppid, reported, lost, produced)
	switch {
	case reported == 0:
		t.Fatalf("no loss reported on stderr:\n%s", stderr.String())
	case reported != lost:
		t.Errorf("losses reported as they happened add up to %d, --stats says %d", reported, lost)
	case uint64(len(rows)) > packets:
		t.Errorf("%d rows from %d packets", len(rows), packets)
	case packets+reported != produced:
		t.Errorf("delivered %d + lost %d = %d, but the kernel produced %d", packets, reported, packets+reported, produced)
	case getppid > calls || packets+reported < calls:
		t.Errorf("getppid rows %d, delivered+lost %d, for %d calls", getppid, packets+reported, calls)
	}
}
