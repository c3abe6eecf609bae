package transport

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tqmon/tqmon/resident/wire"
)

// Sessions is the resident runtime as the server sees it.
type Sessions interface {
	// Hello is the handshake sent first on every stream.
	Hello() *wire.Hello
	// Open starts a session for a new stream.
	Open() Session
}

// Session is one remote monitor's session with the resident.
type Session interface {
	// Apply carries out a command from the remote (CBye included). It is
	// never called concurrently with itself or after Close.
	Apply(*wire.Command) error
	// Recv blocks for the next batch to send. It must return when ctx is
	// done (the stream ended); io.EOF means the resident ended the session
	// normally (the stream closes with status OK), another error ends the
	// stream with codes.Aborted and that error's text. A nil batch with a
	// nil error is skipped.
	Recv(ctx context.Context) (*wire.Batch, error)
	// Close ends the session (the resident clears what it set); called
	// once, when the stream ends for any reason.
	Close()
}

// Adapt makes a Sessions from a resident's Hello and Open methods when
// Open returns a concrete session type: Adapt(r.Hello, r.Open).
func Adapt[S Session](hello func() *wire.Hello, open func() S) Sessions {
	return adapted[S]{hello, open}
}

type adapted[S Session] struct {
	hello func() *wire.Hello
	open  func() S
}

func (a adapted[S]) Hello() *wire.Hello { return a.hello() }
func (a adapted[S]) Open() Session      { return a.open() }

// ServerOptions configure a Server.
type ServerOptions struct {
	// Token is the shared secret clients present as "authorization: Bearer
	// <token>". Required for TCP listeners; optional for unix sockets
	// (checked when set).
	Token string
	// MaxFrame bounds a message either way (0: wire.MaxFrame; at most
	// wire.MaxFrame). Larger batches are split (wire.Batch.EncodeSplit);
	// a larger command ends its stream with codes.ResourceExhausted.
	MaxFrame int
	// Logf logs a session's troubles (Apply errors). Default log.Printf.
	Logf func(format string, args ...any)
	// HandshakeTimeout bounds how long a connection may stay
	// unauthenticated (0: HandshakeTimeout; tests shorten it).
	HandshakeTimeout time.Duration
	// TLS, when set, secures every connection (TLSFiles.ServerConfig):
	// the TLS handshake comes first, within HandshakeTimeout, and a
	// client that fails it never reaches the token check. With
	// ClientAuth set, only clients with a certificate its CAs signed get
	// through (mutual TLS). The token is still required over TCP.
	TLS *tls.Config
}

// Stats counts what a server did.
type Stats struct {
	Sessions        int64 // streams that opened a session
	Active          int64 // sessions open now
	Unauthenticated int64 // streams refused for a missing or wrong token
	Refused         int64 // connections closed unauthenticated (too many, or too slow)
	PeerRefused     int64 // streams refused: the peer's sessions, or every session, taken
	Evicted         int64 // idle sessions ended to make room for a new one
	Commands        int64 // commands applied (whatever Apply returned)
	ApplyErrors     int64 // of those, commands Apply refused
	BadCommands     int64 // frames that did not decode (each ends its stream)
	Batches         int64 // batches sent
	Frames          int64 // frames sent for them (more when batches are split)
	Packets         int64 // packets sent
}

// Server serves the tqmon.Resident service for a Sessions.
//
// Apply errors are logged (ServerOptions.Logf) and counted (Stats) and the
// stream goes on: a command the resident cannot carry out (an unknown
// sensor, say) is the remote's mistake, and ending the session would also
// clear everything else it enabled. A frame that does not decode as a
// Command ends the stream with codes.InvalidArgument, since the peer is not
// speaking the protocol. A CBye is applied and then ends the stream (status
// OK), as does the client closing its side.
type Server struct {
	sessions  Sessions
	opts      ServerOptions
	maxFrame  int
	tokenHash [sha256.Size]byte
	grpc      *grpc.Server
	// down is cancelled by Stop: every session ends with codes.Unavailable
	// before the connections close, so remotes learn why.
	down     context.Context
	shutdown context.CancelFunc

	stats struct {
		sessions, active, unauthenticated, commands, applyErrors,
		badCommands, refused, peerRefused, evicted atomic.Int64
		sent Counters
	}
	peers  *peerTable
	nextID atomic.Uint64
}

// NewServer makes a server for s.
func NewServer(s Sessions, opts ServerOptions) (*Server, error) {
	if s == nil {
		return nil, errors.New("transport: nil Sessions")
	}
	srv := &Server{sessions: s, opts: opts, maxFrame: opts.MaxFrame, peers: newPeerTable(MaxSessions, IdleAfter)}
	srv.down, srv.shutdown = context.WithCancel(context.Background())
	if srv.maxFrame == 0 {
		srv.maxFrame = wire.MaxFrame
	}
	if srv.maxFrame < 0 || srv.maxFrame > wire.MaxFrame {
		return nil, fmt.Errorf("transport: MaxFrame %d: want 1..%d", opts.MaxFrame, wire.MaxFrame)
	}
	if opts.Token != "" {
		srv.tokenHash = sha256.Sum256([]byte(opts.Token))
	}
	if srv.opts.Logf == nil {
		srv.opts.Logf = log.Printf
	}
	if srv.opts.HandshakeTimeout <= 0 {
		srv.opts.HandshakeTimeout = HandshakeTimeout
	}
	srv.grpc = grpc.NewServer(
		grpc.ForceServerCodec(rawCodec{}),
		grpc.Creds(newGuardCreds(srv.opts.TLS)),
		grpc.ConnectionTimeout(srv.opts.HandshakeTimeout),
		grpc.MaxConcurrentStreams(MaxSessionsPerConn),
		grpc.MaxRecvMsgSize(srv.maxFrame),
		grpc.MaxSendMsgSize(srv.maxFrame),
		grpc.WaitForHandlers(true),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: keepaliveTime, Timeout: keepaliveTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinTime}),
	)
	srv.grpc.RegisterService(&serviceDesc, srv)
	return srv, nil
}

// Serve accepts connections on lis until Stop; it takes lis over and closes
// it on return. It refuses a listener other than a unix socket when there
// is no token. After Stop it returns nil.
func (srv *Server) Serve(lis net.Listener) error {
	if srv.opts.Token == "" {
		if network := lis.Addr().Network(); network != "unix" {
			lis.Close()
			if strings.HasPrefix(network, "tcp") {
				return errors.New("transport: TCP needs a shared token (--token)")
			}
			return fmt.Errorf("transport: a %s listener needs a shared token (--token)", network)
		}
	}
	if err := srv.grpc.Serve(&guard{Listener: lis, timeout: srv.opts.HandshakeTimeout, refused: &srv.stats.refused}); err != nil {
		return fmt.Errorf("transport: %w", err)
	}
	return nil
}

// stopGrace bounds how long Stop waits for streams to end cleanly before
// cutting the connections.
const stopGrace = 2 * time.Second

// Stop closes the listeners, ends every stream (codes.Unavailable,
// "resident shutting down") and returns once every session has been
// closed.
func (srv *Server) Stop() {
	srv.shutdown()
	done := make(chan struct{})
	go func() {
		srv.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(stopGrace):
		srv.grpc.Stop()
		<-done
	}
}

// Drain waits, at most timeout, until every session's stream has ended:
// after the resident has closed (its last drain sent, every session
// ended), each stream ends cleanly once its last batch is out, and a Stop
// then ends none in the middle.
func (srv *Server) Drain(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for srv.stats.active.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// Stats returns the server's counters.
func (srv *Server) Stats() Stats {
	s := &srv.stats
	return Stats{
		Sessions: s.sessions.Load(), Active: s.active.Load(), Unauthenticated: s.unauthenticated.Load(), Refused: s.refused.Load(),
		PeerRefused: s.peerRefused.Load(), Evicted: s.evicted.Load(),
		Commands: s.commands.Load(), ApplyErrors: s.applyErrors.Load(), BadCommands: s.badCommands.Load(),
		Batches: s.sent.Batches.Load(), Frames: s.sent.Frames.Load(), Packets: s.sent.Packets.Load(),
	}
}

// Serve serves s on lis until ctx is done (then it stops the server, waits
// for every session to close, and returns nil) or lis fails.
func Serve(ctx context.Context, lis net.Listener, s Sessions, opts ServerOptions) error {
	srv, err := NewServer(s, opts)
	if err != nil {
		lis.Close()
		return err
	}
	stop := context.AfterFunc(ctx, srv.Stop)
	defer stop()
	err = srv.Serve(lis)
	if ctx.Err() != nil {
		srv.Stop() // wait for the sessions to close
		return nil
	}
	return err
}

// authorize checks the stream's token when the server has one.
func (srv *Server) authorize(ctx context.Context) error {
	if srv.opts.Token == "" {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return status.Error(codes.Unauthenticated, "transport: no token (want metadata authorization: Bearer <token>)")
	}
	const scheme = "bearer "
	v := vals[0]
	if len(vals) != 1 || len(v) < len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return status.Error(codes.Unauthenticated, "transport: malformed authorization (want Bearer <token>)")
	}
	// Compare digests so the comparison takes the same time whatever the
	// presented token's length.
	sum := sha256.Sum256([]byte(v[len(scheme):]))
	if subtle.ConstantTimeCompare(sum[:], srv.tokenHash[:]) != 1 {
		return status.Error(codes.Unauthenticated, "transport: wrong token")
	}
	return nil
}

// errClientDone is the cause when the client ends the session (CBye or
// closing its side).
var errClientDone = errors.New("client ended the session")

var errShutdown = status.Error(codes.Unavailable, "transport: resident shutting down")

func (srv *Server) session(ss grpc.ServerStream) error {
	if err := srv.authorize(ss.Context()); err != nil {
		srv.stats.unauthenticated.Add(1)
		return err
	}
	// Admitted before the handshake: a peer over its limit, or a
	// newcomer finding every session taken and none idle, learns why
	// without ever being served.
	who := authenticated(ss.Context())
	adm, err := srv.peers.admit(who)
	if err != nil {
		srv.stats.peerRefused.Add(1) // counted, not logged: a peer could flood the log
		return err
	}
	defer srv.peers.leave(adm)
	hello, err := HelloFrame(srv.sessions, srv.maxFrame)
	if err != nil {
		if errors.Is(err, wire.ErrFrameTooLarge) {
			return status.Error(codes.ResourceExhausted, err.Error())
		}
		return status.Error(codes.Internal, err.Error())
	}
	if err := ss.SendMsg(&frame{hello}); err != nil {
		return err
	}

	id := srv.nextID.Add(1)
	srv.stats.sessions.Add(1)
	srv.stats.active.Add(1)
	// Closed once: when the stream ends, or earlier when it is evicted
	// (its stream may then stay stuck in SendMsg behind a remote that
	// does not read, but the resident's slot is free at once).
	sess := NewServed(srv.sessions.Open(), func() { srv.stats.active.Add(-1) })
	defer sess.Close()

	ctx, cancel := context.WithCancelCause(ss.Context())
	defer cancel(nil)
	defer context.AfterFunc(srv.down, func() { cancel(errShutdown) })()
	// Evicted: the stream ends with the eviction's status (cancel comes
	// first, so the loop below reads the closed session's end as that,
	// never as a clean end).
	srv.peers.opened(adm, func(why error) {
		srv.stats.evicted.Add(1)
		srv.opts.Logf("transport: session %d (peer %s): %s", id, who, status.Convert(why).Message())
		cancel(why)
		sess.Close()
	})

	// Commands: one goroutine receives and applies them. It may outlive
	// this handler briefly (RecvMsg fails once the stream is over); Served
	// keeps it from calling Apply after Close.
	go func() {
		for {
			var f frame
			if err := ss.RecvMsg(&f); err != nil {
				if err == io.EOF {
					err = errClientDone
				} else if st, ok := status.FromError(err); ok && st.Code() == codes.ResourceExhausted {
					err = status.Errorf(codes.ResourceExhausted, "transport: command frame over this resident's limit: %s", st.Message())
				}
				cancel(err)
				return
			}
			var c wire.Command
			if err := c.UnmarshalBinary(f.b); err != nil {
				srv.stats.badCommands.Add(1)
				cancel(status.Errorf(codes.InvalidArgument, "transport: bad command frame: %v", err))
				return
			}
			bye := c.Kind == wire.CBye
			// On CBye the stream ends first, so that the session ending
			// by it reads as the client's doing (status OK), not as the
			// resident's; Close waits for the lock, so Apply still comes
			// first.
			ok, err := sess.Command(&c, func() { cancel(errClientDone) })
			if !ok {
				return
			}
			if c.Kind != wire.CLease {
				srv.peers.command(adm, c.Kind, err)
			}
			srv.stats.commands.Add(1)
			if err != nil {
				srv.stats.applyErrors.Add(1)
				srv.opts.Logf("transport: session %d: %s command refused: %v", id, c.Kind, err)
			}
			if bye {
				return
			}
		}
	}()

	err = sess.Pump(ctx, srv.maxFrame, func(fr []byte) error { return ss.SendMsg(&frame{fr}) }, &srv.stats.sent)
	var se *SessionError
	switch {
	case ctx.Err() != nil:
		if cause := context.Cause(ctx); cause == errClientDone {
			return nil
		} else if _, ok := status.FromError(cause); ok {
			return cause
		}
		return status.FromContextError(ctx.Err()).Err()
	case errors.As(err, &se) && se.Encoding:
		code := codes.Internal
		if errors.Is(err, wire.ErrFrameTooLarge) {
			code = codes.ResourceExhausted
		}
		return status.Errorf(code, "transport: %v", err)
	case errors.As(err, &se):
		return status.Errorf(codes.Aborted, "transport: %v", err)
	}
	return err
}

// CheckToken refuses a TCP address without a token: on a network, an
// unauthenticated monitor could enable every sensor. Unix sockets are
// guarded by their file's permissions and the peer's credentials.
func CheckToken(addr, token string) error {
	network, _, err := ParseAddr(addr)
	if err != nil {
		return err
	}
	if network != "unix" && token == "" {
		return fmt.Errorf("%s: a TCP listener needs a shared token: --token or $%s", addr, TokenEnv)
	}
	return nil
}

// ServeAt listens at addr (a unix socket path, or host:port with
// opts.Token) and serves s in the background until ctx is done, as Serve
// does; a bad address, a TCP address without a token, or a listener that
// cannot be made return at once. The channel yields Serve's result once
// the server has stopped. It is the whole glue a program being monitored
// needs (generated sensor packages call it from their Serve).
func ServeAt(ctx context.Context, addr string, s Sessions, opts ServerOptions) (<-chan error, error) {
	if err := CheckToken(addr, opts.Token); err != nil {
		return nil, err
	}
	lis, err := Listen(addr)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, lis, s, opts) }()
	return done, nil
}
