package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tmuxSession is a detached tmux session on a private server running one
// shell command line, for driving the animated display in a real terminal.
type tmuxSession struct {
	t      *testing.T
	socket string
	start  time.Time
}

var tmuxSeq atomic.Int32

// newTmux starts cmdline in a w×h tmux window: the command, then its exit
// status and the terminal's settings (stty -a), then a long sleep so the
// pane can be read.
func newTmux(t *testing.T, w, h int, cmdline string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("tqmon-test-%d-%d", os.Getpid(), tmuxSeq.Add(1))}
	script := cmdline + "; echo EXIT=$?; stty -a; sleep 600"
	s.start = time.Now()
	out, err := exec.Command("tmux", "-L", s.socket, "-f", "/dev/null", "new-session", "-d", "-s", "t",
		"-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-L", s.socket, "kill-server").Run() })
	return s
}

// screen is what the pane shows now.
func (s *tmuxSession) screen() string { return s.capture("-J") }

// styled is what the pane shows now with its attributes as escape
// sequences.
func (s *tmuxSession) styled() string { return s.capture("-e") }

func (s *tmuxSession) capture(flag string) string {
	out, err := exec.Command("tmux", "-L", s.socket, "capture-pane", "-p", flag, "-t", "t").Output()
	if err != nil {
		s.t.Fatalf("capture-pane: %v", err)
	}
	return string(out)
}

// waitScreen polls the pane until ok holds, for at most d.
func (s *tmuxSession) waitScreen(what string, d time.Duration, ok func(string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for {
		scr := s.screen()
		if ok(scr) {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no %s within %v; the pane shows:\n%s", what, d, scr)
		}
		time.Sleep(40 * time.Millisecond)
	}
}

func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	args := append([]string{"-L", s.socket, "send-keys", "-t", "t"}, keys...)
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		s.t.Fatalf("send-keys: %v\n%s", err, out)
	}
}

// exited waits for the command's end and checks its status and that the
// terminal is back in cooked mode (icanon, echo): nothing left raw.
func (s *tmuxSession) exited(status int) string {
	s.t.Helper()
	scr := s.waitScreen("exit", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "EXIT=") && strings.Contains(scr, "icanon")
	})
	if !strings.Contains(scr, fmt.Sprintf("EXIT=%d", status)) {
		s.t.Errorf("exit status: want %d:\n%s", status, scr)
	}
	for _, mode := range []string{"icanon", "echo", "isig"} {
		if !regexp.MustCompile(`(^|\s)` + mode + `(\s|$)`).MatchString(scr) {
			s.t.Errorf("terminal left without %s:\n%s", mode, scr)
		}
	}
	return scr
}

var clockRE = regexp.MustCompile(`(\d+):(\d\d):(\d\d)(\.\d)?\s*$`)

// headerClock reads the digital clock at the end of the first line.
func headerClock(scr string) (string, bool) {
	first, _, _ := strings.Cut(scr, "\n")
	m := clockRE.FindStringSubmatch(first)
	if m == nil {
		return "", false
	}
	return m[0], true
}

// tqmon demo in a terminal: within 2 s it draws the processors (boxes),
// processes, mailboxes and a running clock; the picture changes; q ends it
// with the terminal restored.
func TestDemoInTerminal(t *testing.T) {
	bin := binary(t)
	s := newTmux(t, 100, 30, bin+" demo")
	first := s.waitScreen("processors, processes, mailboxes and a clock", 2*time.Second, func(scr string) bool {
		_, clk := headerClock(scr)
		return clk && strings.Contains(scr, "┌─── A ┐") && strings.Contains(scr, "┌─── C ┐") &&
			strings.Contains(scr, "(P1)") && strings.Contains(scr, "(P8)") &&
			strings.Contains(scr, "( M1 )") && strings.Contains(scr, "( M8 )")
	})
	took := time.Since(s.start)
	clk1, _ := headerClock(first)
	body := func(scr string) string { _, rest, _ := strings.Cut(scr, "\n"); return rest }
	later := s.waitScreen("a later, different picture", 10*time.Second, func(scr string) bool {
		clk, ok := headerClock(scr)
		return ok && clk != clk1 && body(scr) != body(first)
	})
	clk2, _ := headerClock(later)
	t.Logf("first frame after %v (clock %s), then clock %s", took.Round(time.Millisecond), clk1, clk2)
	if strings.Contains(later, "live: ended") {
		t.Errorf("the demo ended by itself")
	}
	// P1 resumes P2 or P3 within seconds: ResumedbyP1 makes its circle
	// flash (bold reverse video, lit first).
	deadline := time.Now().Add(20 * time.Second)
	flashRE := regexp.MustCompile("\x1b\\[1;7m\\((?:\x1b\\[[0-9;]*m)*(P[0-9]+)")
	for {
		if m := flashRE.FindStringSubmatch(s.styled()); m != nil {
			t.Logf("%s flashes after %v", m[1], time.Since(s.start).Round(100*time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process flashed (ResumedbyP1) in 20 s:\n%s", s.styled())
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.keys("q")
	scr := s.exited(0)
	if strings.Contains(scr, "( M1 )") {
		t.Errorf("the display is still on the screen after q:\n%s", scr)
	}
}

// tqmon view in a terminal: the paper example paused at 2:50:00 shows the
// wait on M7; → steps to the next change (P1's send to M7 at 2:51:13); t
// shows the timeline; a smaller window is laid out again; space resumes;
// q ends with the terminal restored.
func TestViewInTerminal(t *testing.T) {
	bin := binary(t)
	s := newTmux(t, 100, 30, fmt.Sprintf("%s view --history %s --display %s -f %s --from 2:50:00 --paused",
		bin, paper, paperSpec, paperQuery))
	s.waitScreen("the paper at 2:50:00", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "2:50:00") && strings.Contains(scr, "(P2)<─") && strings.Contains(scr, "│ (P1) │") &&
			strings.Contains(scr, "❚❚ 1x")
	})
	s.keys("Right")
	s.waitScreen("a step to 2:51:13", 5*time.Second, func(scr string) bool {
		clk, _ := headerClock(scr)
		return strings.TrimSpace(clk) == "2:51:13" && strings.Contains(scr, ">( M7 )")
	})
	s.keys("t")
	s.waitScreen("the timeline", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "timeline: entities") && strings.Contains(scr, "P2  │")
	})
	s.keys("t")
	if out, err := exec.Command("tmux", "-L", s.socket, "resize-window", "-t", "t", "-x", "60", "-y", "20").CombinedOutput(); err != nil {
		t.Fatalf("resize-window: %v\n%s", err, out)
	}
	s.waitScreen("the picture at 60×20", 5*time.Second, func(scr string) bool {
		lines := strings.Split(strings.TrimRight(scr, "\n"), "\n")
		return len(lines) <= 20 && strings.Contains(scr, "( M7 )") && strings.Contains(scr, "┌─── A ┐") && strings.Contains(scr, "(P2)")
	})
	s.keys("Space")
	s.waitScreen("playing", 5*time.Second, func(scr string) bool { return strings.Contains(scr, "▶ 1x") })
	s.keys("q")
	s.exited(0)
}

// A bad display spec is reported with its place before the terminal is
// touched: exit 2, the terminal as it was.
func TestBadSpecInTerminal(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.display")
	if err := os.WriteFile(bad, []byte("display Process as circle label Sate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newTmux(t, 100, 30, bin+" demo --display "+bad)
	scr := s.exited(2)
	if !strings.Contains(scr, "bad.display:1:33: Process has no attribute Sate (did you mean State?)") {
		t.Errorf("no positioned error:\n%s", scr)
	}
}

// tqmon query --connect --display: the demo subject in its own process,
// the monitor drawing it in a terminal; q ends the monitor (the subject
// carries on), the terminal restored.
func TestConnectDisplayInTerminal(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "subject.sock")
	subj := exec.Command(bin, "demo", "--subject", "--listen", sock, "--duration", "60s", "--scale", "5")
	if err := subj.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { subj.Process.Kill(); subj.Wait() })
	waitFor(t, "the subject's socket", 10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil })
	s := newTmux(t, 100, 30, fmt.Sprintf("%s query --connect %s --display %s -f %s", bin, sock, paperSpec, paperQuery))
	first := s.waitScreen("processors, processes, mailboxes and a clock", 5*time.Second, func(scr string) bool {
		_, clk := headerClock(scr)
		return clk && strings.Contains(scr, "┌─── A ┐") && strings.Contains(scr, "(P8)") && strings.Contains(scr, "( M8 )") &&
			strings.Contains(scr, "tqmon query --connect")
	})
	clk1, _ := headerClock(first)
	s.waitScreen("the clock running", 5*time.Second, func(scr string) bool {
		clk, ok := headerClock(scr)
		return ok && clk != clk1
	})
	s.keys("q")
	s.exited(0)
}
