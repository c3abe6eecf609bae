package embedded

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/resident/transport"
)

// A server with a token refuses clients without it; JetStream is on and
// its store is where Data says.
func TestTokenAndJetStream(t *testing.T) {
	dir := t.TempDir()
	s, err := Start(Options{Addr: "127.0.0.1:0", Data: dir, Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if !s.JetStream() {
		t.Fatal("JetStream is off")
	}
	if _, err := nats.Connect(s.URL()); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("without the token: %v", err)
	}
	if _, err := nats.Connect(s.URL(), nats.Token("wrong")); err == nil {
		t.Fatal("a wrong token was accepted")
	}
	nc, err := nats.Connect(s.URL(), nats.Token("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if nc.MaxPayload() != 8<<20 {
		t.Errorf("max payload %d, want 8 MiB", nc.MaxPayload())
	}
}

// A bad address is refused with what is wrong.
func TestBadAddr(t *testing.T) {
	for _, a := range []string{"nope", "127.0.0.1:x", "127.0.0.1:70000"} {
		if _, err := Start(Options{Addr: a}); err == nil || !strings.Contains(err.Error(), a) {
			t.Errorf("%q: %v", a, err)
		}
	}
}

// TestClusterTLS: a cluster's nodes given TLS (one set of files,
// transport.TLSFiles.ServerConfig, for clients and routes) route to each
// other over TLS only — a route port says nothing in clear and closes a
// connection that starts no handshake in its timeout, over TLS its INFO
// asks for TLS and verification, and a message crosses the routes
// between two TLS clients of two nodes — and
// a node whose certificate another CA signed (trusting that CA) cannot
// join: both ends log the handshake refused and it has no route. A node
// without TLS cannot join either.
func TestClusterTLS(t *testing.T) {
	certs := testkit.NewCerts(t)
	cfg, err := transport.TLSFiles{Cert: certs.ServerCert, Key: certs.ServerKey, CA: certs.CA}.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	var log testkit.Buffer
	nodes, err := StartNodes(Options{Token: "s3cret", TLS: cfg, Logf: log.Logf}, 3, func(int) string { return t.TempDir() })
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range nodes {
			s.Shutdown()
		}
	}()
	for _, s := range nodes {
		if !strings.HasPrefix(s.URL(), "tls://") || s.Routes() != 2 {
			t.Fatalf("node at %s: %d routes, want tls:// and 2", s.URL(), s.Routes())
		}
	}
	// The route port says nothing in clear (TLS first); over TLS, with a
	// certificate its CA signed, it says INFO, TLS required and verified.
	routeAddr := strings.TrimPrefix(nodes[0].RouteURL(), "nats-route://")
	c, err := net.Dial("tcp", routeAddr)
	if err != nil {
		t.Fatal(err)
	}
	// A connection that never starts its handshake is closed after
	// tlsTimeout (2 s), not held: read until then, at most 10 s.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	c.Close()
	if len(b) != 0 || err != nil {
		t.Fatalf("the route port said %q in clear, then %v: want nothing, then closed", b, err)
	}
	client, err := transport.TLSFiles{Cert: certs.ClientCert, Key: certs.ClientKey, CA: certs.CA}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := tls.Dial("tcp", routeAddr, client)
	if err != nil {
		t.Fatal(err)
	}
	info, err := bufio.NewReader(tc).ReadString('\n')
	tc.Close()
	if err != nil || !strings.Contains(info, `"tls_required":true`) || !strings.Contains(info, `"tls_verify":true`) {
		t.Fatalf("the route port's INFO %q, %v: want TLS required and verified", info, err)
	}
	connect := func(s *Server) *nats.Conn {
		nc, err := nats.Connect(s.URL(), nats.Token("s3cret"), nats.Secure(client))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	testkit.Routed(t, connect(nodes[2]), connect(nodes[0]), 10*time.Second)

	other, err := transport.TLSFiles{Cert: certs.OtherServerCert, Key: certs.OtherServerKey, CA: certs.OtherCA}.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tls  *tls.Config
	}{{"another CA", other}, {"no TLS", nil}} {
		var log4 testkit.Buffer
		n4, err := Start(Options{Addr: "127.0.0.1:0", Data: t.TempDir(), Name: "n4", TLS: c.tls, Logf: log4.Logf,
			Cluster: &Cluster{Name: "fleet", Addr: "127.0.0.1:0", Routes: []string{nodes[0].RouteURL()}}})
		if err != nil {
			t.Fatal(err)
		}
		refused := func() bool {
			if c.tls == nil {
				// The plain node is told TLS is required; the node
				// dialled times its handshake out.
				return strings.Contains(log.String(), "TLS route handshake error")
			}
			return strings.Contains(log4.String(), "TLS route handshake error") &&
				strings.Contains(log4.String(), "certificate signed by unknown authority")
		}
		deadline := time.Now().Add(15 * time.Second)
		for !refused() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !refused() {
			t.Errorf("%s: no refusal logged\nthe node:\n%s\nthe cluster:\n%s", c.name, log4.String(), log.String())
		}
		if n4.Routes() != 0 || nodes[0].Routes() != 2 {
			t.Errorf("%s: the node has %d routes, the cluster's first %d: want 0 and 2", c.name, n4.Routes(), nodes[0].Routes())
		}
		n4.Shutdown()
	}
}
