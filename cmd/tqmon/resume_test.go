package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/resident/fleet/embedded"
	"github.com/tqmon/tqmon/resident/transport"
)

// resumeFleet starts three demo hosts, web-1 to web-3 (seeds 50 to 52; host i
// on urls[i%len(urls)]), for d each, their truths under dir, with more
// flags if given.
func resumeFleet(t *testing.T, bin, dir string, urls []string, d string, flags ...string) ([]*exec.Cmd, map[string]string) {
	t.Helper()
	var hosts []*exec.Cmd
	truths := map[string]string{}
	for i, h := range []string{"web-1", "web-2", "web-3"} {
		tr := filepath.Join(dir, "truth-"+h)
		truths[h] = tr
		hosts = append(hosts, startDemoHost(t, bin, urls[i%len(urls)], h, append([]string{"--duration", d, "--seed", fmt.Sprint(50 + i), "--truth", tr}, flags...)...))
	}
	return hosts, truths
}

// monitor runs tqmon query --resume NAME over url, its answer appended
// to the file out, its stderr in errb.
func monitor(t *testing.T, bin, url, name, out string, errb *strings.Builder, args ...string) *exec.Cmd {
	t.Helper()
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // the child has its own
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	a := append([]string{"query", "--nats", url, "--resume", name, "--format", "csv", "--time-format", "ns"}, fleetQueries()...)
	cmd := exec.CommandContext(ctx, bin, append(a, args...)...)
	cmd.Stdout, cmd.Stderr = f, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// answering waits until the monitor's answer in out has n bytes.
func answering(t *testing.T, out string, n int64) {
	t.Helper()
	waitFor(t, "the monitor's rows", time.Minute, func() bool {
		fi, err := os.Stat(out)
		return err == nil && fi.Size() >= n
	})
}

// killOnceAnswering kills the monitor (SIGKILL: no CBye, no last commit,
// its output cut wherever it was) once its answer has 64 KiB, about a
// tenth of the whole. A monitor that had already ended on its own (its
// stderr in errb says why) fails the test here: it forgot its state as
// it ended, and the one started again would not resume but start anew —
// which once showed only as that one's "no host is served".
func killOnceAnswering(t *testing.T, mon *exec.Cmd, out string, errb *strings.Builder) {
	t.Helper()
	answering(t, out, 64<<10)
	mon.Process.Kill()
	mon.Wait()
	if ws, ok := mon.ProcessState.Sys().(syscall.WaitStatus); ok && !ws.Signaled() {
		t.Fatalf("the monitor ended on its own before it was killed (%v):\n%s", mon.ProcessState, errb.String())
	}
}

// TestFleetResume: a monitor (query --nats --resume) killed mid-run with
// SIGKILL and started again resumes: the file its answer was appended
// to, by both, holds exactly the queries' answer over the hosts' truths
// — every row once (issue 18's "kill and restart the monitor"). In
// "node killed, replicas 3" the fleet is a three-node cluster in this
// process and the stream has three replicas: web-2's node is shut down
// mid-run, and the monitor, killed after it, resumes through another
// node: nothing is lost from the replicated stream. In "TLS cluster" the
// three nodes' clients and routes are TLS (a private CA, mutual TLS, a
// token): the hosts and the monitor, killed and resumed through another
// node, are on tls:// with --tls-ca and their certificate.
func TestFleetResume(t *testing.T) {
	bin := binary(t)
	for _, c := range []struct {
		name       string
		cluster    bool // three nodes
		replicas   bool // --replicas 3
		nodeKilled bool
		tls        bool // TLS on the clients and routes
	}{
		{name: "monitor killed"},
		{name: "node killed, replicas 3", cluster: true, replicas: true, nodeKilled: true},
		{name: "TLS cluster", cluster: true, tls: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var base embedded.Options
			var flags []string // the hosts' and the monitor's
			if c.tls {
				certs := testkit.NewCerts(t)
				// The nodes verify each other against --tls-ca, as
				// they do their clients (mutual TLS).
				cfg, err := transport.TLSFiles{Cert: certs.ServerCert, Key: certs.ServerKey, CA: certs.CA}.ServerConfig()
				if err != nil {
					t.Fatal(err)
				}
				base = embedded.Options{Token: "s3cret", TLS: cfg}
				flags = []string{"--token", "s3cret", "--tls-ca", certs.CA, "--tls-cert", certs.ClientCert, "--tls-key", certs.ClientKey}
			}
			var nodes []*embedded.Server
			var err error
			if c.cluster {
				nodes, err = embedded.StartNodes(base, 3, func(int) string { return t.TempDir() })
			} else {
				var s *embedded.Server
				s, err = embedded.Start(embedded.Options{Addr: "127.0.0.1:0", Data: t.TempDir()})
				nodes = append(nodes, s)
			}
			if err != nil {
				t.Fatal(err)
			}
			shut := map[int]bool{}
			t.Cleanup(func() {
				for i, s := range nodes {
					if !shut[i] {
						s.Shutdown()
					}
				}
			})
			var urls []string
			for _, s := range nodes {
				urls = append(urls, s.URL())
				if c.tls && !strings.HasPrefix(s.URL(), "tls://") {
					t.Fatalf("node at %s: want tls://", s.URL())
				}
			}
			hosts, truths := resumeFleet(t, bin, dir, urls, "3s", flags...)
			out := filepath.Join(dir, "answer.csv")
			args := flags
			if c.replicas {
				args = append(args, "--replicas", "3")
			}
			var err1 strings.Builder
			mon := monitor(t, bin, urls[0], "m", out, &err1, args...)
			if c.nodeKilled {
				answering(t, out, 16<<10)
				nodes[1].Shutdown() // web-2's: it reconnects to another node
				shut[1] = true
			}
			killOnceAnswering(t, mon, out, &err1)
			before, _ := os.ReadFile(out)
			if !c.cluster {
				// Another question under the same name is refused: its
				// answer would not go on from this one's.
				code, _, serr := tqmon(t, "query", "--nats", urls[0], "--resume", "m", "-e", "range of s is SendMessage retrieve (s.Host)")
				if code != exitUsage || !strings.Contains(serr, "other queries") {
					t.Errorf("resuming m with another query: exit %d, want %d:\n%s", code, exitUsage, serr)
				}
			}
			var err2 strings.Builder
			again := monitor(t, bin, urls[len(urls)-1], "m", out, &err2, args...)
			if err := again.Wait(); err != nil {
				t.Fatalf("the monitor resumed: %v\n%s", err, err2.String())
			}
			if !strings.Contains(err2.String(), "resuming m") {
				t.Errorf("the monitor started again did not say it resumed:\n%s", err2.String())
			}
			for _, h := range hosts {
				h.Wait()
			}
			answer, _ := os.ReadFile(out)
			t.Logf("killed after %d bytes of the answer; %d bytes in all", len(before), len(answer))
			sameAsFleetTruth(t, string(answer), dir, truths, fleetQueries()...)
		})
	}
}

// TestFleetResumeGone: the stream keeps at most --retain-bytes; a monitor
// resumed after the hosts' first frames were dropped cannot rebuild its
// answer: it says so, naming the host and the watermark the answer
// stands up to, and exits 3 — never a silent answer with a hole.
func TestFleetResumeGone(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	s, err := embedded.Start(embedded.Options{Addr: "127.0.0.1:0", Data: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	hosts, _ := resumeFleet(t, bin, dir, []string{s.URL()}, "2s")
	out := filepath.Join(dir, "answer.csv")
	var err1 strings.Builder
	mon := monitor(t, bin, s.URL(), "g", out, &err1, "--retain-bytes", "64KiB")
	killOnceAnswering(t, mon, out, &err1)
	for _, h := range hosts {
		h.Wait() // their frames go on into the stream, pushing the first out
	}
	var err2 strings.Builder
	again := monitor(t, bin, s.URL(), "g", out, &err2, "--retain-bytes", "64KiB")
	err = again.Wait()
	if code := again.ProcessState.ExitCode(); code != exitIncomplete || !strings.Contains(err2.String(), "no longer holds") ||
		!strings.Contains(err2.String(), "watermark") {
		t.Fatalf("resumed past the stream's retention: exit %d (%v), want %d, saying what was lost:\n%s", code, err, exitIncomplete, err2.String())
	}
}

// TestResumeUsage: --resume needs --nats, and goes with printing the
// answer only.
func TestResumeUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--history", filepath.Join(root, "testdata", "paper")}, "goes with --nats"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--record", filepath.Join(t.TempDir(), "r.db")}, "not --display, --record"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--replicas", "7"}, "want 1 to 5"},
	} {
		args := append([]string{"query", "--resume", "r", "-e", "range of s is SendMessage retrieve (s.Process)"}, c.args...)
		code, _, serr := tqmon(t, args...)
		if code != exitUsage || !strings.Contains(serr, c.want) {
			t.Errorf("%v: exit %d, want %d saying %q:\n%s", c.args, code, exitUsage, c.want, serr)
		}
	}
}
