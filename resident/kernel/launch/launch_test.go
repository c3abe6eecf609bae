package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The test binary is the shim.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ShimCommand {
		err := Shim(os.Args[2:])
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(ExitCode(err))
	}
	os.Exit(m.Run())
}

var self = Options{Self: []string{os.Args[0], ShimCommand}}

// A command started paused runs only once released, with the pid Start
// reported.
func TestStartRelease(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	c, err := Start([]string{"sh", "-c", `echo $$ > "$0"`, out}, self)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(out); err == nil {
		t.Fatal("the command ran before its release")
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	st, err := c.Wait()
	if err != nil || !st.Success() {
		t.Fatalf("%v %v", st, err)
	}
	text, _ := os.ReadFile(out)
	if got := strings.TrimSpace(string(text)); got != itoa(c.Pid) {
		t.Errorf("the command ran as pid %s, Start said %d", got, c.Pid)
	}
}

// Killed (or abandoned) before its release, the command never runs.
func TestKillBeforeRelease(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	c, err := Start([]string{"sh", "-c", `echo ran > "$0"`, out}, self)
	if err != nil {
		t.Fatal(err)
	}
	c.Kill()
	c.Wait()
	if _, err := os.Stat(out); err == nil {
		t.Error("the command ran")
	}
}

func TestMissingCommand(t *testing.T) {
	if _, err := Start([]string{"no-such-command-tqmon"}, self); err == nil || !strings.Contains(err.Error(), "executable file not found") {
		t.Errorf("got %v", err)
	}
	if _, err := Start([]string{"true"}, Options{Self: []string{"/bin/true"}}); err == nil || !strings.Contains(err.Error(), "did not start") {
		t.Errorf("a program that is no shim: %v", err)
	}
}

func itoa(n int) string {
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		n /= 10
		if n == 0 {
			return s
		}
	}
}

// If the monitor goes away before releasing it (its end of the pipe
// closes), the shim exits with status 125 without running the command.
func TestMonitorGone(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	c, err := Start([]string{"sh", "-c", `echo ran > "$0"`, out}, self)
	if err != nil {
		t.Fatal(err)
	}
	c.release.Close()
	st, _ := c.Wait()
	if st.ExitCode() != 125 {
		t.Errorf("exit status %d, want 125", st.ExitCode())
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the command ran")
	}
}
