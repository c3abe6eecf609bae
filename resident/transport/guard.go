package transport

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// Doors: what a peer can make the resident hold before and after it
// proves it may.
const (
	// MaxUnauthenticated bounds the connections that have not yet opened
	// an authenticated stream: one more is closed as it is accepted.
	MaxUnauthenticated = 16
	// HandshakeTimeout bounds how long a connection may stay
	// unauthenticated: then it is closed (ServerOptions.HandshakeTimeout
	// may shorten it).
	HandshakeTimeout = 10 * time.Second
	// MaxSessionsPerConn bounds the sessions (streams) one connection —
	// one remote monitor — has open at once.
	MaxSessionsPerConn = 8
)

// guard is a listener that counts and times its unauthenticated
// connections.
type guard struct {
	net.Listener
	timeout time.Duration // 0: HandshakeTimeout
	unauth  atomic.Int64
	refused *atomic.Int64
}

func (g *guard) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if g.unauth.Add(1) > MaxUnauthenticated {
			g.unauth.Add(-1)
			g.refused.Add(1)
			c.Close()
			continue
		}
		timeout := g.timeout
		if timeout <= 0 {
			timeout = HandshakeTimeout
		}
		gc := &guardedConn{Conn: c, g: g, peer: peerOf(c)}
		gc.timer = time.AfterFunc(timeout, func() {
			// Not gc.Close: that reads gc.timer, which this function
			// may run before Accept has set.
			if !gc.authed.Load() {
				g.refused.Add(1)
				gc.leave()
				gc.Conn.Close()
			}
		})
		return gc, nil
	}
}

// guardedConn is an accepted connection, unauthenticated until a stream
// on it passes the token check.
type guardedConn struct {
	net.Conn
	g      *guard
	peer   string // who is at the other end (peerOf)
	timer  *time.Timer
	authed atomic.Bool
	once   sync.Once
}

// authenticated marks the connection as having proved it may connect.
func (c *guardedConn) authenticated() {
	if c.authed.CompareAndSwap(false, true) {
		c.timer.Stop()
		c.leave()
	}
}

// leave takes the connection off the unauthenticated count, once.
func (c *guardedConn) leave() { c.once.Do(func() { c.g.unauth.Add(-1) }) }

func (c *guardedConn) Close() error {
	c.timer.Stop()
	c.leave()
	return c.Conn.Close()
}

// guardCreds hands gRPC the guarded connection as the peer's AuthInfo,
// so that a stream can mark its connection authenticated. Without tls it
// secures nothing: the transport is plain, as with insecure credentials;
// with tls (gRPC's own TLS credentials) the TLS handshake runs on the
// guarded connection, so a client that never completes it is still
// counted and timed out by the guard.
type guardCreds struct {
	tls credentials.TransportCredentials // nil: plain
}

// newGuardCreds makes the server's credentials, over TLS when cfg is set.
func newGuardCreds(cfg *tls.Config) guardCreds {
	if cfg == nil {
		return guardCreds{}
	}
	return guardCreds{tls: credentials.NewTLS(cfg)}
}

type connInfo struct {
	credentials.CommonAuthInfo
	c *guardedConn
}

func (connInfo) AuthType() string { return "tqmon" }

func (guardCreds) ClientHandshake(_ context.Context, _ string, c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c, connInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}, nil
}

func (g guardCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	gc, _ := c.(*guardedConn)
	if g.tls == nil {
		return c, connInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}, c: gc}, nil
	}
	tc, _, err := g.tls.ServerHandshake(c)
	if err != nil {
		return nil, nil, err
	}
	return tc, connInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}, c: gc}, nil
}

func (g guardCreds) Info() credentials.ProtocolInfo {
	if g.tls != nil {
		return g.tls.Info()
	}
	return credentials.ProtocolInfo{SecurityProtocol: "insecure"}
}

func (g guardCreds) Clone() credentials.TransportCredentials {
	if g.tls != nil {
		return guardCreds{tls: g.tls.Clone()}
	}
	return guardCreds{}
}

func (guardCreds) OverrideServerName(string) error { return nil }

// authenticated marks the connection of the stream with context ctx as
// authenticated and returns its peer (peerOf).
func authenticated(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "unknown"
	}
	if ci, ok := p.AuthInfo.(connInfo); ok && ci.c != nil {
		ci.c.authenticated()
		return ci.c.peer
	}
	return p.Addr.String()
}
