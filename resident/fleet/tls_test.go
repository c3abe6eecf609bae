package fleet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/resident/fleet/embedded"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
)

// tlsServer starts an embedded server with TLS on loopback, its server
// files sf and token "s3cret".
func tlsServer(t *testing.T, sf transport.TLSFiles) *embedded.Server {
	t.Helper()
	cfg, err := sf.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	s, err := embedded.Start(embedded.Options{Addr: "127.0.0.1:0", Data: t.TempDir(), Token: "s3cret", TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func security(t *testing.T, f transport.TLSFiles) transport.Security {
	t.Helper()
	cfg, err := f.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	return transport.Security{TLS: cfg}
}

// TestNATSOverTLS: an embedded server with TLS is at a tls:// URL; a
// host joins and a monitor reads its frames over TLS when they trust the
// server's CA; a client that does not is refused naming the unknown
// authority.
func TestNATSOverTLS(t *testing.T) {
	certs := testkit.NewCerts(t)
	s := tlsServer(t, transport.TLSFiles{Cert: certs.ServerCert, Key: certs.ServerKey})
	if !strings.HasPrefix(s.URL(), "tls://") {
		t.Fatalf("URL %s: want tls://", s.URL())
	}
	sec := security(t, transport.TLSFiles{CA: certs.CA})
	hostConn, err := Connect(s.URL(), "s3cret", "test host", sec)
	if err != nil {
		t.Fatal(err)
	}
	defer hostConn.Close()
	if !hostConn.TLSRequired() {
		t.Error("the connection is not TLS")
	}
	f := newFake()
	srv, err := Join(hostConn, "web-1", f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conns, err := DialHosts(ctx, s.URL(), "s3cret", "web-*", DialOptions{Security: sec})
	if err != nil {
		t.Fatal(err)
	}
	if len(conns) != 1 || conns[0].Hello().Name != "web-1" {
		t.Fatalf("hosts %v", conns)
	}
	f.out <- &wire.Batch{Watermark: 7}
	close(f.shut)
	if b, err := conns[0].Recv(); err != nil || b.Watermark != 7 {
		t.Fatalf("batch %+v, %v", b, err)
	}
	if _, err := conns[0].Recv(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	conns[0].Close()

	_, err = Connect(s.URL(), "s3cret", "test", security(t, transport.TLSFiles{CA: certs.OtherCA}))
	if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") || !strings.Contains(err.Error(), "--tls-ca FILE") {
		t.Errorf("another CA: %v; want the unknown authority named, and --tls-ca", err)
	}
	// nats:// to a TLS server: nats.go turns to TLS as the server asks,
	// verifying against the system's roots.
	plain := "nats://" + strings.TrimPrefix(s.URL(), "tls://")
	_, err = Connect(plain, "s3cret", "test")
	if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") || !strings.Contains(err.Error(), "--tls-ca FILE") {
		t.Errorf("nats:// without the CA: %v; want the unknown authority named, and --tls-ca", err)
	}
	if nc, err := Connect(plain, "s3cret", "test", sec); err != nil {
		t.Errorf("nats:// with the CA: %v", err)
	} else {
		nc.Close()
	}
	// TLS asked of a server without it.
	p, err := embedded.Start(embedded.Options{Addr: "127.0.0.1:0", Data: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	if _, err := Connect(p.URL(), "", "test", sec); err == nil || !strings.Contains(err.Error(), "does not serve TLS") {
		t.Errorf("--tls-ca to a plain server: %v; want a refusal saying it does not serve TLS", err)
	}
}

// TestNATSMutualTLS: a server given a CA for clients admits only
// clients presenting a certificate that CA signed.
func TestNATSMutualTLS(t *testing.T) {
	certs := testkit.NewCerts(t)
	s := tlsServer(t, transport.TLSFiles{Cert: certs.ServerCert, Key: certs.ServerKey, CA: certs.CA})
	_, err := Connect(s.URL(), "s3cret", "test", security(t, transport.TLSFiles{CA: certs.CA}))
	if err == nil || !strings.Contains(err.Error(), "--tls-cert FILE and --tls-key FILE") {
		t.Errorf("without a client certificate: %v; want a refusal saying to give --tls-cert and --tls-key", err)
	}
	nc, err := Connect(s.URL(), "s3cret", "test", security(t, transport.TLSFiles{CA: certs.CA, Cert: certs.ClientCert, Key: certs.ClientKey}))
	if err != nil {
		t.Fatalf("with the client certificate: %v", err)
	}
	nc.Close()
}

// TestNATSTokenNotInClear: a token goes to a nats:// server that is not
// loopback only with --insecure (any URL of a list counts); tls:// URLs
// and loopback go ahead.
func TestNATSTokenNotInClear(t *testing.T) {
	for _, c := range []struct {
		urls   string
		sec    transport.Security
		refuse bool
	}{
		{"nats://192.0.2.1:4222", transport.Security{}, true},
		{"192.0.2.1:4222", transport.Security{}, true},
		{"nats://127.0.0.1:4222,nats://192.0.2.1:4222", transport.Security{}, true},
		{"nats://192.0.2.1:4222", transport.Security{Insecure: true}, false},
		{"tls://192.0.2.1:4222", transport.Security{}, false},
		{"nats://localhost:4222,nats://[::1]:4222", transport.Security{}, false},
	} {
		_, err := secureOptions(c.urls, "s3cret", c.sec)
		if got := errors.Is(err, transport.ErrInClear); got != c.refuse {
			t.Errorf("%s insecure %v: %v; want refused %v", c.urls, c.sec.Insecure, err, c.refuse)
		}
		if _, err := secureOptions(c.urls, "", c.sec); err != nil {
			t.Errorf("%s without a token: %v", c.urls, err)
		}
	}
	if _, err := Connect("nats://192.0.2.1:4222", "s3cret", "test"); !errors.Is(err, transport.ErrInClear) || !strings.Contains(err.Error(), "--insecure") {
		t.Errorf("Connect: %v; want ErrInClear naming --insecure", err)
	}
}

// sniffer is a TCP proxy to a server that keeps every byte it passes,
// both ways: what anyone on the path would read.
type sniffer struct {
	mu   sync.Mutex
	seen bytes.Buffer
	addr string // where clients connect
}

// sniff starts a sniffer in front of the server at url (scheme://HOST:PORT)
// until the test ends.
func sniff(t *testing.T, url string) *sniffer {
	t.Helper()
	target := url[strings.Index(url, "://")+3:]
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := &sniffer{addr: l.Addr().String()}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); d.Close() })
			go s.pass(d, c)
			go s.pass(c, d)
		}
	}()
	return s
}

// pass copies from src to dst, keeping a copy.
func (s *sniffer) pass(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			s.mu.Lock()
			s.seen.Write(buf[:n])
			s.mu.Unlock()
			if _, err := dst.Write(buf[:n]); err != nil {
				src.Close()
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// saw reports whether what passed holds s.
func (s *sniffer) saw(str string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Contains(s.seen.Bytes(), []byte(str))
}

// TestDurableResumeTLS: TestDurableResume's monitor, killed and resumed
// by name, over tls:// to a server whose certificate a private CA
// signed: it resumes as it does in clear, and on the path between it
// and the server neither its token nor the name of the stream its frames
// come from pass in clear — while in the same run over nats:// both do
// (the sniffer sees what it would).
func TestDurableResumeTLS(t *testing.T) {
	const token = "s3cret" // tlsServer's
	certs := testkit.NewCerts(t)
	s := tlsServer(t, transport.TLSFiles{Cert: certs.ServerCert, Key: certs.ServerKey})
	sec := security(t, transport.TLSFiles{CA: certs.CA})
	path := sniff(t, s.URL())
	durableResume(t, s.URL(), "tls://"+path.addr, token, sec)
	if path.saw(token) || path.saw(Stream) {
		t.Errorf("over TLS the path saw the token %v, the stream's name %v", path.saw(token), path.saw(Stream))
	}

	plain, err := embedded.Start(embedded.Options{Addr: "127.0.0.1:0", Data: t.TempDir(), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Shutdown)
	clear := sniff(t, plain.URL())
	durableResume(t, plain.URL(), "nats://"+clear.addr, token, transport.Security{})
	if !clear.saw(token) || !clear.saw(Stream) {
		t.Errorf("in clear the path saw the token %v, the stream's name %v: the sniffer misses what passes", clear.saw(token), clear.saw(Stream))
	}
}
