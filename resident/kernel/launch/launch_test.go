package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// helperLaunch makes the test binary a launcher that starts its
// arguments stopped, prints the pid and then waits to be killed: the
// monitor that goes away before the release.
const helperLaunch = "TQMON_LAUNCH_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperLaunch) == "1" {
		c, err := Start(os.Args[1:], Options{})
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString(strconv.Itoa(c.Pid) + "\n")
		select {}
	}
	os.Exit(m.Run())
}

// A command started stopped runs only once released, with the pid Start
// reported.
func TestStartRelease(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	c, err := Start([]string{"sh", "-c", `echo $$ > "$0"`, out}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(out); err == nil {
		t.Fatal("the command ran before its release")
	}
	// Stopped at its exec: the program is the command's already.
	want, _ := filepath.EvalSymlinks(c.Path)
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(c.Pid) + "/exe"); err != nil || exe != want {
		t.Errorf("the stopped process runs %q (%v), want %s", exe, err, want)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	st, err := c.Wait()
	if err != nil || !st.Success() {
		t.Fatalf("%v %v", st, err)
	}
	text, _ := os.ReadFile(out)
	if got := strings.TrimSpace(string(text)); got != strconv.Itoa(c.Pid) {
		t.Errorf("the command ran as pid %s, Start said %d", got, c.Pid)
	}
	if c.Release() != nil {
		t.Error("a second Release failed")
	}
}

// Killed before its release, the command never runs.
func TestKillBeforeRelease(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	c, err := Start([]string{"sh", "-c", `echo ran > "$0"`, out}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Kill()
	st, _ := c.Wait()
	if st.ExitCode() != -1 {
		t.Errorf("exit status %d, want -1 (killed)", st.ExitCode())
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the command ran")
	}
}

// A non-zero status is the command's, not an error.
func TestExitStatus(t *testing.T) {
	c, err := Start([]string{"sh", "-c", "exit 7"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	st, err := c.Wait()
	if err != nil || st.ExitCode() != 7 {
		t.Errorf("%v %v", st, err)
	}
}

func TestMissingCommand(t *testing.T) {
	if _, err := Start([]string{"no-such-command-tqmon"}, Options{}); err == nil || !strings.Contains(err.Error(), "executable file not found") {
		t.Errorf("got %v", err)
	}
}

// If the monitor goes away before releasing it, the command is killed
// without running (PTRACE_O_EXITKILL).
func TestMonitorGone(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	mon := exec.Command(os.Args[0], "sh", "-c", `echo ran > "$0"`, out)
	mon.Env = append(os.Environ(), helperLaunch+"=1")
	stdout, err := mon.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	var b [32]byte
	n, _ := stdout.Read(b[:])
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil {
		mon.Process.Kill()
		t.Fatalf("the launcher said %q", b[:n])
	}
	mon.Process.Kill()
	mon.Wait()
	// The command was the launcher's child: once the launcher is gone it
	// is killed, then reaped by init (or a subreaper). Wait for its pid
	// to be gone or a zombie.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := os.Stat(out); err == nil {
		t.Error("the command ran")
	}
}
