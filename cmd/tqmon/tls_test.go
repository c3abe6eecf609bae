package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/resident/transport"
)

// startTLSSubject runs a demo subject (seed 5, 700 ms, writing its truth
// into truthDir) serving gRPC over TLS on a free loopback port, with
// more flags; it returns the address once it listens.
func startTLSSubject(t *testing.T, bin string, certs *testkit.Certs, truthDir string, flags ...string) string {
	t.Helper()
	addr := freeAddr(t)
	subj := exec.Command(bin, append([]string{"demo", "--subject", "--listen", addr, "--token", "s3cret",
		"--tls-cert", certs.ServerCert, "--tls-key", certs.ServerKey,
		"--wait-limit", "0", "--duration", "700ms", "--seed", "5", "--truth", truthDir}, flags...)...)
	var serr strings.Builder
	subj.Stderr = &serr
	if err := subj.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { subj.Process.Kill(); subj.Wait() })
	waitFor(t, "the subject listening", 10*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr
}

// queryTruth is query q over the truth in dir (rows sorted, header
// dropped), once the subject has written it.
func queryTruth(t *testing.T, dir, q string) []string {
	t.Helper()
	waitFor(t, "the subject's truth", 20*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "*.sdl"))
		return len(m) > 0
	})
	time.Sleep(200 * time.Millisecond) // its CSV files are written with it
	code, want, stderr := tqmon(t, "query", "--history", dir, "-f", q, "--format", "csv", "--time-format", "ns")
	if code != 0 {
		t.Fatalf("query over the truth: %s", stderr)
	}
	return sortedRows(want)
}

// TestConnectTLS: a resident serving TLS (a throwaway CA's certificate)
// answers a monitor given that CA (--tls-ca) exactly as its truth says;
// a monitor without it, or with another CA, is refused with an error
// naming the certificate problem and the flag to give. With --tls-ca on
// the resident (mutual TLS) a monitor must also present a certificate
// that CA signed.
func TestConnectTLS(t *testing.T) {
	bin := binary(t)
	certs := testkit.NewCerts(t)
	q := filepath.Join(root, "testdata", "paper", "resumed_by_p1.tq")
	for _, mutual := range []bool{false, true} {
		dir := t.TempDir()
		var flags, client []string
		if mutual {
			flags = []string{"--tls-ca", certs.CA}
			client = []string{"--tls-cert", certs.ClientCert, "--tls-key", certs.ClientKey}
		}
		addr := startTLSSubject(t, bin, certs, dir, flags...)
		query := func(extra ...string) (int, string, string) {
			return tqmon(t, append([]string{"query", "--connect", addr, "--token", "s3cret", "-f", q, "--format", "csv", "--time-format", "ns"}, extra...)...)
		}
		for _, c := range []struct {
			flags []string
			want  string
		}{
			{nil, "if it serves TLS, give --tls-ca FILE"},
			{[]string{"--tls-ca", certs.OtherCA}, "x509: certificate signed by unknown authority"},
			{[]string{"--tls-ca", certs.CA, "--tls-cert", certs.ClientCert}, "--tls-cert FILE and --tls-key FILE go together"},
		} {
			if code, _, errs := query(c.flags...); code == 0 || !strings.Contains(errs, c.want) {
				t.Errorf("mutual %v, %v: exit %d\n%s\nwant %q", mutual, c.flags, code, errs, c.want)
			}
		}
		if mutual {
			if code, _, errs := query("--tls-ca", certs.CA); code == 0 || !strings.Contains(errs, "the server requires a client certificate (mutual TLS): give --tls-cert FILE and --tls-key FILE") {
				t.Errorf("mutual, no client certificate: exit %d\n%s", code, errs)
			}
		}
		code, out, errs := query(append([]string{"--tls-ca", certs.CA}, client...)...)
		if code != 0 {
			t.Fatalf("mutual %v, with the CA: exit %d\n%s", mutual, code, errs)
		}
		got, want := sortedRows(out), queryTruth(t, dir, q)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("mutual %v: over TLS\n%s\ntruth\n%s", mutual, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestFleetTLS: tqmon serve with TLS and mutual TLS (a tls:// URL), a
// demo host joining it over TLS with its client certificate, and a
// monitor over tls:// whose by-Host answers equal the host's truth; a
// monitor without the CA, or without a client certificate, is refused
// naming the problem.
func TestFleetTLS(t *testing.T) {
	bin := binary(t)
	certs := testkit.NewCerts(t)
	dir := t.TempDir()
	url := startServe(t, bin, "--token", "s3cret", "--tls-cert", certs.ServerCert, "--tls-key", certs.ServerKey, "--tls-ca", certs.CA)
	if !strings.HasPrefix(url, "tls://") {
		t.Fatalf("serve with TLS printed %s: want tls://", url)
	}
	client := []string{"--token", "s3cret", "--tls-ca", certs.CA, "--tls-cert", certs.ClientCert, "--tls-key", certs.ClientKey}
	tr := filepath.Join(dir, "truth-web-1")
	host := exec.Command(bin, append([]string{"demo", "--subject", "--nats", url, "--host", "web-1", "--duration", "700ms",
		"--seed", "30", "--truth", tr}, client...)...)
	var serr strings.Builder
	host.Stderr = &serr
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer host.Process.Kill()
	waitFor(t, "web-1 joining", 10*time.Second, func() bool { return strings.Contains(serr.String(), "serving on") })

	qs := fleetQueries()
	query := func(flags ...string) (int, string, string) {
		return tqmon(t, append(append([]string{"query", "--nats", url, "--hosts", "web-*"}, qs...), append([]string{"--format", "csv", "--time-format", "ns"}, flags...)...)...)
	}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--token", "s3cret"}, "x509: certificate signed by unknown authority"},
		{[]string{"--token", "s3cret", "--tls-ca", certs.OtherCA}, "x509: certificate signed by unknown authority"},
		{[]string{"--token", "s3cret", "--tls-ca", certs.CA}, "the server requires a client certificate (mutual TLS)"},
	} {
		if code, _, errs := query(c.flags...); code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d\n%s\nwant %q", c.flags, code, errs, c.want)
		}
	}
	code, out, errs := query(client...)
	if code != 0 {
		t.Fatalf("monitor over TLS: exit %d\n%s\nhost:\n%s", code, errs, serr.String())
	}
	if err := host.Wait(); err != nil {
		t.Fatalf("host: %v\n%s", err, serr.String())
	}
	sameAsFleetTruth(t, out, dir, map[string]string{"web-1": tr}, qs...)
}

// TestTokenNotInClearCommands: a monitor refuses to send its token in
// clear to a resident or a NATS server that is not on this machine,
// before connecting: exit 2, saying to use TLS or --insecure.
func TestTokenNotInClearCommands(t *testing.T) {
	for _, args := range [][]string{
		{"query", "--connect", "192.0.2.1:7070"},
		{"query", "--nats", "nats://192.0.2.1:4222"},
		{"query", "--nats", "nats://192.0.2.1:4222", "--resume", "m"},
		{"record", "--connect", "192.0.2.1:7070", "--db", filepath.Join(t.TempDir(), "db")},
		{"shell", "--connect", "192.0.2.1:7070", "--history-file", ""},
	} {
		args = append(args, "--token", "s3cret")
		if args[0] == "query" {
			args = append(args, "-e", sendsQuery)
		}
		code, _, errs := tqmon(t, args...)
		if code != exitUsage || !strings.Contains(errs, "refusing to send the token in clear to 192.0.2.1") || !strings.Contains(errs, "--insecure") {
			t.Errorf("%v: exit %d\n%s", args, code, errs)
		}
	}
}

// TestServeClusterTLS: three tqmon serve nodes of one cluster (--cluster,
// --routes, --name), the same --tls-* flags securing their clients and
// their routes; a demo host joins the second over tls://, a monitor asks
// through the third: its answers equal the host's truth (the frames
// crossed TLS routes). A fourth node, its certificate from another CA,
// cannot join: it says the route's TLS handshake failed, the unknown
// authority named.
func TestServeClusterTLS(t *testing.T) {
	bin := binary(t)
	if code, _, errs := tqmon(t, "serve", "--routes", "nats-route://127.0.0.1:6222"); code != exitUsage || !strings.Contains(errs, "--cluster") {
		t.Errorf("--routes without --cluster: exit %d, want %d saying to give --cluster:\n%s", code, exitUsage, errs)
	}
	certs := testkit.NewCerts(t)
	dir := t.TempDir()
	var routes []string
	for range 4 {
		routes = append(routes, "nats-route://"+freeAddr(t))
	}
	node := func(i int, cert, key, ca string) []string {
		return []string{"--token", "s3cret", "--tls-cert", cert, "--tls-key", key, "--tls-ca", ca,
			"--cluster", strings.TrimPrefix(routes[i], "nats-route://"), "--routes", strings.Join(routes[:3], ","), "--name", fmt.Sprintf("n%d", i+1)}
	}
	var urls []string
	for i := range 3 {
		urls = append(urls, startServe(t, bin, node(i, certs.ServerCert, certs.ServerKey, certs.CA)...))
	}
	cfg, err := transport.TLSFiles{Cert: certs.ClientCert, Key: certs.ClientKey, CA: certs.CA}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	var ncs []*nats.Conn
	for _, u := range urls {
		nc, err := nats.Connect(u, nats.Token("s3cret"), nats.Secure(cfg))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		ncs = append(ncs, nc)
	}
	testkit.Routed(t, ncs[1], ncs[2], 30*time.Second)
	testkit.Routed(t, ncs[2], ncs[1], 30*time.Second)

	client := []string{"--token", "s3cret", "--tls-ca", certs.CA, "--tls-cert", certs.ClientCert, "--tls-key", certs.ClientKey}
	tr := filepath.Join(dir, "truth-web-1")
	host := startDemoHost(t, bin, urls[1], "web-1", append([]string{"--duration", "700ms", "--seed", "31", "--truth", tr}, client...)...)
	qs := fleetQueries()
	code, out, errs := tqmon(t, append(append([]string{"query", "--nats", urls[2], "--hosts", "web-*"}, qs...), append([]string{"--format", "csv", "--time-format", "ns"}, client...)...)...)
	if code != 0 {
		t.Fatalf("monitor through another node: exit %d\n%s", code, errs)
	}
	if err := host.Wait(); err != nil {
		t.Fatalf("host: %v", err)
	}
	sameAsFleetTruth(t, out, dir, map[string]string{"web-1": tr}, qs...)

	var serr testkit.Buffer
	other := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, node(3, certs.OtherServerCert, certs.OtherServerKey, certs.OtherCA)...)...)
	other.Stderr = &serr
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Signal(os.Interrupt); other.Wait() }()
	waitFor(t, "the node of another CA refused", 20*time.Second, func() bool {
		s := serr.String()
		return strings.Contains(s, "TLS route handshake error") && strings.Contains(s, "certificate signed by unknown authority")
	})
}
