package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/resident/wire"
)

// dialSec dials addr with sec, within 10 s.
func dialSec(addr, token string, sec Security) (wire.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return Dial(ctx, addr, token, sec)
}

// clientSec is the Security of a client with files f (a test's mistake
// fails it).
func clientSec(t *testing.T, f TLSFiles) Security {
	t.Helper()
	cfg, err := f.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	return Security{TLS: cfg}
}

// serveTLS serves f over TLS on loopback with server files sf and
// returns its address.
func serveTLS(t *testing.T, f Sessions, sf TLSFiles) string {
	t.Helper()
	cfg, err := sf.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	lis, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, lis, f, ServerOptions{Token: "s3cret", TLS: cfg, HandshakeTimeout: 5 * time.Second})
	return lis.Addr().String()
}

// TestTLS: a resident serving TLS (a throwaway CA's certificate) talks
// the whole protocol with a monitor that trusts that CA; a monitor that
// does not trust it, or does not speak TLS, is refused with an error
// naming the problem and what to give.
func TestTLS(t *testing.T) {
	certs := testkit.NewCerts(t)
	f := newFake()
	addr := serveTLS(t, f, TLSFiles{Cert: certs.ServerCert, Key: certs.ServerKey})

	c, err := dialSec(addr, "s3cret", clientSec(t, TLSFiles{CA: certs.CA}))
	if err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	exercise(t, f, c)

	_, err = dialSec(addr, "s3cret", clientSec(t, TLSFiles{CA: certs.OtherCA}))
	if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") || !strings.Contains(err.Error(), "--tls-ca FILE") {
		t.Errorf("with another CA: %v; want the unknown authority named, and --tls-ca", err)
	}
	// Plain gRPC to a TLS port: the server's handshake fails; the client
	// does not get a session.
	if _, err = dialSec(addr, "", Security{}); err == nil || !strings.Contains(err.Error(), "if it serves TLS, give --tls-ca FILE") {
		t.Errorf("a plaintext client: %v; want a refusal saying to give --tls-ca", err)
	}
	// By name: the certificate holds localhost.
	port := addr[strings.LastIndex(addr, ":"):]
	if c, err := dialSec("localhost"+port, "s3cret", clientSec(t, TLSFiles{CA: certs.CA})); err != nil {
		t.Errorf("by name: %v", err)
	} else {
		c.Close()
	}
}

// TestMutualTLS: a resident given --tls-ca accepts only monitors
// presenting a certificate that CA signed.
func TestMutualTLS(t *testing.T) {
	certs := testkit.NewCerts(t)
	f := newFake()
	addr := serveTLS(t, f, TLSFiles{Cert: certs.ServerCert, Key: certs.ServerKey, CA: certs.CA})

	if _, err := dialSec(addr, "s3cret", clientSec(t, TLSFiles{CA: certs.CA})); err == nil ||
		!strings.Contains(err.Error(), "--tls-cert FILE and --tls-key FILE") {
		t.Errorf("without a client certificate: %v; want a refusal saying to give --tls-cert and --tls-key", err)
	}
	// A certificate the server's CA did not sign (another authority's):
	// refused. (A session it opened would also be the one waitOpen
	// finds below, and exercise would wait on it for ever.)
	wrong := clientSec(t, TLSFiles{CA: certs.CA, Cert: certs.OtherServerCert, Key: certs.OtherServerKey})
	if c, err := dialSec(addr, "s3cret", wrong); err == nil {
		c.Close()
		t.Fatal("a certificate another authority signed was accepted")
	}
	c, err := dialSec(addr, "s3cret", clientSec(t, TLSFiles{CA: certs.CA, Cert: certs.ClientCert, Key: certs.ClientKey}))
	if err != nil {
		t.Fatalf("with the client certificate: %v", err)
	}
	exercise(t, f, c)
}

// TestTokenNotInClear: a token is not sent in clear over TCP to a host
// that is not loopback: Dial refuses before connecting, saying to use
// TLS or --insecure; loopback, TLS and Insecure go ahead.
func TestTokenNotInClear(t *testing.T) {
	const remote = "192.0.2.1:7070" // TEST-NET-1: nothing answers there
	_, err := dialSec(remote, "s3cret", Security{})
	if !errors.Is(err, ErrInClear) || !strings.Contains(err.Error(), "--tls-ca FILE") || !strings.Contains(err.Error(), "--insecure") {
		t.Fatalf("token in clear to %s: %v; want ErrInClear naming --tls-ca and --insecure", remote, err)
	}
	for _, sec := range []Security{{Insecure: true}, clientSec(t, TLSFiles{CA: testkit.NewCerts(t).CA})} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := Dial(ctx, remote, "s3cret", sec)
		cancel()
		if err == nil || errors.Is(err, ErrInClear) {
			t.Errorf("insecure %v, TLS %v: %v; want a connection attempt (that fails)", sec.Insecure, sec.TLS != nil, err)
		}
	}
	if _, err := dialSec(remote, "", Security{}); errors.Is(err, ErrInClear) {
		t.Errorf("no token: %v", err)
	}
	for _, h := range []string{"localhost", "127.0.0.1", "127.3.2.1", "::1", "[::1]", "LOCALHOST.", "0.0.0.0", "::"} {
		if !Loopback(h) {
			t.Errorf("Loopback(%q) = false", h)
		}
	}
	for _, h := range []string{"192.0.2.1", "example.com", "localhost.example.com", "10.0.0.1", "fe80::1", ""} {
		if Loopback(h) {
			t.Errorf("Loopback(%q) = true", h)
		}
	}
}

// TestTLSFilesErrors: missing halves and unreadable files are refused
// naming the flags.
func TestTLSFilesErrors(t *testing.T) {
	certs := testkit.NewCerts(t)
	for _, c := range []struct {
		f      TLSFiles
		server bool
		want   string
	}{
		{TLSFiles{CA: certs.CA}, true, "a TLS server needs --tls-cert FILE and --tls-key FILE"},
		{TLSFiles{Cert: certs.ServerCert}, true, "a TLS server needs --tls-cert FILE and --tls-key FILE"},
		{TLSFiles{Cert: certs.ClientCert}, false, "--tls-cert FILE and --tls-key FILE go together"},
		{TLSFiles{CA: certs.ClientKey}, false, "no PEM certificate in it"},
		{TLSFiles{CA: "/nonexistent/ca.pem"}, false, "--tls-ca: open /nonexistent/ca.pem"},
		{TLSFiles{Cert: certs.ServerCert, Key: certs.ClientKey}, true, "private key does not match public key"},
	} {
		var err error
		if c.server {
			_, err = c.f.ServerConfig()
		} else {
			_, err = c.f.ClientConfig()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v (server %v): %v; want %q", c.f, c.server, err, c.want)
		}
	}
	if cfg, err := (TLSFiles{}).ServerConfig(); cfg != nil || err != nil {
		t.Errorf("no files: %v, %v; want plain", cfg, err)
	}
}

// TestTLSHandshakeTimeout: under TLS the doors hold as before — a
// connection that never starts its TLS handshake, or finishes it and
// opens no authenticated stream, is closed after HandshakeTimeout.
func TestTLSHandshakeTimeout(t *testing.T) {
	certs := testkit.NewCerts(t)
	cfg, err := TLSFiles{Cert: certs.ServerCert, Key: certs.ServerKey}.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	lis, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 200 * time.Millisecond
	serve(t, lis, newFake(), ServerOptions{Token: "s3cret", TLS: cfg, HandshakeTimeout: timeout})
	addr := lis.Addr().String()
	ccfg, err := TLSFiles{CA: certs.CA}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	ccfg.NextProtos = []string{"h2"} // as gRPC's: without it the server ends the connection at once
	for _, handshake := range []bool{false, true} {
		start := time.Now()
		var c net.Conn
		if handshake {
			c, err = tls.Dial("tcp", addr, ccfg)
		} else {
			c, err = net.Dial("tcp", addr)
		}
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var buf [256]byte
		for {
			if _, err := c.Read(buf[:]); err != nil {
				if isTimeout(err) {
					t.Fatalf("handshake %v: a silent connection was not closed in 10 s", handshake)
				}
				break
			}
		}
		c.Close()
		if d := time.Since(start); d < timeout {
			t.Errorf("handshake %v: closed after %v, before the timeout %v", handshake, d, timeout)
		}
	}
}
