// Package transport carries the resident ↔ remote protocol (package wire)
// over gRPC, without protoc or generated code: a hand-written service
// "tqmon.Resident" with one bidirectional streaming method, "Session",
// whose messages are raw wire frames passed through a codec that neither
// marshals nor registers anything globally.
//
// On a stream the resident (server) sends the encoded Hello first, then
// encoded Batches; the remote (client) sends encoded Commands. Each stream
// is one session. The server side runs in the subject process and serves a
// Sessions (the resident runtime); the client side, Dial, gives a remote
// monitor a wire.Conn.
//
// Addresses: "unix:/path" or a bare path (anything starting with '/' or
// '.', or without ':') is a unix socket; "tcp:host:port" or "host:port" is
// TCP. TCP needs a shared token, sent as "authorization: Bearer <token>";
// over a unix socket the file's 0600 permissions guard access (it is
// bound in a private 0700 directory and renamed into place, so no other
// user can connect at any instant) and a token is optional (checked when
// set). Token gives the token from a flag, a file or $TQMON_TOKEN, so it
// need not be on a command line. ServerOptions.TLS and Dial's Security
// put the connection under TLS (mutual TLS when the server verifies
// client certificates); without TLS, Dial refuses to send a token to a
// host that is not loopback unless Security.Insecure (tls.go).
//
// # Doors
//
// What a peer can make the resident hold, before and after it proves it
// may (the same for the Go and the kernel resident, which both serve
// through this package):
//
//   - MaxUnauthenticated (16) connections wait for their first
//     authenticated stream at once; one more is closed as it is accepted
//     (guard.go).
//   - HandshakeTimeout (10 s): a connection that has not opened an
//     authenticated stream by then is closed (TestHandshakeTimeout).
//   - MaxSessionsPerConn (8) sessions at once on one connection (gRPC's
//     stream limit: the next waits until one ends;
//     TestSessionsPerConnection).
//   - MaxSessionsPerPeer (16) sessions at once per peer over all its
//     connections — a peer is a uid on a unix socket (SO_PEERCRED), a
//     remote IP address over TCP; one more is refused before the
//     handshake with codes.ResourceExhausted naming the peer and the
//     limit (peers.go; TestSessionsPerPeer).
//   - MaxSessions (64, the session table's size) in all. When every one
//     is taken, a newcomer evicts the session idle the longest — one
//     that holds nothing enabled and whose remote has sent nothing but
//     lease renewals for IdleAfter (1 s) — and that session's remote gets
//     an error saying so (codes.ResourceExhausted), never a quiet end.
//     With none idle the newcomer is refused, naming the bound. So idle
//     sessions cannot lock out a real monitor
//     (TestIdleSessionsDoNotLockOut, TestEvictionChoosesIdle); sessions
//     that hold enables are never evicted, and one peer holds at most a
//     quarter of the table.
//
// Server.Stats counts what the doors refused (Refused, PeerRefused) and
// evicted (Evicted). What an authenticated session can make the resident
// hold is the session core's business (package session).
package transport

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
)

// Service and method names.
const (
	ServiceName   = "tqmon.Resident"
	SessionMethod = "/" + ServiceName + "/Session"
)

// frame is one raw message on the stream: an encoded wire frame.
type frame struct{ b []byte }

// rawCodec passes frames through as their bytes. It is selected per server
// (grpc.ForceServerCodec) and per call (grpc.ForceCodec), never registered.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("transport: codec cannot marshal %T", v)
	}
	return f.b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("transport: codec cannot unmarshal into %T", v)
	}
	// gRPC may reuse data's buffer once Unmarshal returns.
	f.b = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "tqmon" }

// sessionHandler is what serviceDesc's handler calls; *Server implements it.
type sessionHandler interface {
	session(grpc.ServerStream) error
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: ServiceName,
	HandlerType: (*sessionHandler)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName: "Session",
		Handler: func(srv any, stream grpc.ServerStream) error {
			return srv.(sessionHandler).session(stream)
		},
		ServerStreams: true,
		ClientStreams: true,
	}},
	Metadata: "tqmon/resident/transport",
}

// Keepalive: a dead peer is noticed within about a minute even when no
// batch is flowing.
const (
	keepaliveTime    = 30 * time.Second
	keepaliveTimeout = 20 * time.Second
	keepaliveMinTime = 10 * time.Second // what the server tolerates
)

// ParseAddr splits an address into a network ("unix" or "tcp") and the
// address to listen on or dial.
func ParseAddr(addr string) (network, address string, err error) {
	switch {
	case addr == "":
		return "", "", errors.New("transport: empty address")
	case strings.HasPrefix(addr, "unix:"):
		p := strings.TrimPrefix(addr, "unix:")
		if strings.HasPrefix(p, "//") { // unix:///abs/path
			p = p[2:]
		}
		if p == "" {
			return "", "", fmt.Errorf("transport: address %q: no socket path", addr)
		}
		return "unix", p, nil
	case strings.HasPrefix(addr, "tcp:"):
		a := strings.TrimPrefix(addr, "tcp:")
		if _, _, err := net.SplitHostPort(a); err != nil {
			return "", "", fmt.Errorf("transport: address %q: want tcp:host:port: %v", addr, err)
		}
		return "tcp", a, nil
	case strings.HasPrefix(addr, "/"), strings.HasPrefix(addr, "."), !strings.Contains(addr, ":"):
		return "unix", addr, nil
	default:
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return "", "", fmt.Errorf("transport: address %q: want host:port or a socket path: %v", addr, err)
		}
		return "tcp", addr, nil
	}
}

// Listen listens on addr (see ParseAddr). A unix socket's file is created
// with mode 0600 before anyone can connect to it; a stale socket file (nobody accepting on it) is removed
// first, while a live socket or a file that is not a socket is an error.
func Listen(addr string) (net.Listener, error) {
	network, address, err := ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	if network == "tcp" {
		lis, err := net.Listen("tcp", address)
		if err != nil {
			return nil, fmt.Errorf("transport: %w", err)
		}
		return lis, nil
	}
	if fi, err := os.Lstat(address); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("transport: %s exists and is not a socket; not replacing it", address)
		}
		c, err := net.DialTimeout("unix", address, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("transport: %s: something is already listening there", address)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("transport: %s exists and may be in use (%v); not replacing it", address, err)
		}
		if err := os.Remove(address); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("transport: removing stale socket: %w", err)
		}
	}
	// The socket is bound in a private directory (0700: nobody else can
	// connect to it there), made 0600, and only then renamed into place:
	// there is no instant at which another user can connect.
	dir, err := os.MkdirTemp(filepath.Dir(address), ".tqmon-sock-")
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	lis.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		lis.Close()
		return nil, fmt.Errorf("transport: %w", err)
	}
	if err := os.Rename(tmp, address); err != nil {
		lis.Close()
		return nil, fmt.Errorf("transport: %w", err)
	}
	return &unixListener{lis, &net.UnixAddr{Name: address, Net: "unix"}}, nil
}

// unixListener is a unix socket listener bound elsewhere and renamed to
// addr: it reports addr and removes it on Close.
type unixListener struct {
	*net.UnixListener
	addr *net.UnixAddr
}

func (l *unixListener) Addr() net.Addr { return l.addr }

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	os.Remove(l.addr.Name)
	return err
}

// TokenEnv is the environment variable a token may come from, so that it
// need not appear in a command line (which other users see in ps).
const TokenEnv = "TQMON_TOKEN"

// Token returns the shared token to use: flag (--token) if given, else the
// contents of file (--token-file, surrounding white space trimmed), else
// $TQMON_TOKEN, else "". Giving both flag and file is an error.
func Token(flag, file string) (string, error) {
	switch {
	case flag != "" && file != "":
		return "", errors.New("transport: give --token or --token-file, not both")
	case flag != "":
		return flag, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("transport: token file: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("transport: token file %s is empty", file)
		}
		return t, nil
	}
	return os.Getenv(TokenEnv), nil
}
