package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"

	"github.com/tqmon/tqmon/resident/wire"
)

// closeGrace bounds how long Close waits for the resident to acknowledge
// CBye (by ending the stream) before cutting the connection.
const closeGrace = 2 * time.Second

// recvAhead is how many decoded batches a connection holds for Recv; past
// that the reader stops and gRPC flow control pushes back on the resident.
const recvAhead = 4

// errClosed is what Recv and Send return after Close.
var errClosed = wire.ErrClosed

// Dial connects to the resident at addr (see ParseAddr), presenting token
// when non-empty, and reads its Hello: a resident speaking another protocol
// version is refused. ctx bounds the connection and handshake only.
//
// sec (at most one) secures the connection: over TLS when sec.TLS is set
// (the server's name for verification is addr's host, "localhost" for a
// unix socket). A token is not sent in clear over TCP to a host that is
// not loopback unless sec.Insecure (Security.CheckClear).
//
// Errors from the resident keep their gRPC status (status.Code(err) is
// codes.Unauthenticated for a missing or wrong token). The returned Conn's
// Recv returns io.EOF when the resident ends the session normally; Send may
// be called from several goroutines, Recv from one at a time.
func Dial(ctx context.Context, addr, token string, sec ...Security) (wire.Conn, error) {
	var s Security
	switch len(sec) {
	case 0:
	case 1:
		s = sec[0]
	default:
		return nil, errors.New("transport: Dial takes at most one Security")
	}
	return dialWith(ctx, addr, token, net.Dialer{}, s)
}

// dialWith is Dial with the dialer to connect with (tests bind a local
// address, to be several TCP peers).
func dialWith(ctx context.Context, addr, token string, d net.Dialer, sec Security) (wire.Conn, error) {
	network, address, err := ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	if sec.TLS != nil {
		creds = credentials.NewTLS(sec.TLS)
	} else if network == "tcp" {
		host, _, _ := net.SplitHostPort(address)
		if err := sec.CheckClear("transport: "+addr, host, token); err != nil {
			return nil, err
		}
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, address)
		}),
		grpc.WithDefaultCallOptions(
			grpc.ForceCodec(rawCodec{}),
			grpc.MaxCallRecvMsgSize(wire.MaxFrame),
			grpc.MaxCallSendMsgSize(wire.MaxFrame),
		),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepaliveTime, Timeout: keepaliveTimeout}),
	}
	if network == "unix" {
		opts = append(opts, grpc.WithAuthority("localhost"))
	}
	cc, err := grpc.NewClient("passthrough:///"+address, opts...)
	if err != nil {
		return nil, fmt.Errorf("transport: %s: %w", addr, err)
	}

	// The stream outlives ctx (which bounds the dial only) but keeps its
	// values.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if token != "" {
		sctx = metadata.AppendToOutgoingContext(sctx, "authorization", "Bearer "+token)
	}
	fail := func(err error) (wire.Conn, error) {
		cancel()
		cc.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("transport: %s: %w (%v)", addr, ctx.Err(), err)
		}
		return nil, err
	}
	stop := context.AfterFunc(ctx, cancel)
	defer stop()

	stream, err := cc.NewStream(sctx, &serviceDesc.Streams[0], SessionMethod)
	if err != nil {
		return fail(TLSHint(fmt.Errorf("transport: %s: %w", addr, err)))
	}
	var f frame
	if err := stream.RecvMsg(&f); err != nil {
		if err == io.EOF {
			err = errors.New("the resident ended the stream before its handshake")
		}
		return fail(TLSHint(fmt.Errorf("transport: %s: handshake: %w", addr, err)))
	}
	hello, err := ParseHello("transport: "+addr, f.b)
	if err != nil {
		return fail(err)
	}
	if !stop() { // ctx ended during the handshake
		return fail(fmt.Errorf("transport: %s: handshake interrupted", addr))
	}

	c := &conn{
		addr:   addr,
		cc:     cc,
		stream: stream,
		cancel: cancel,
		hello:  hello,
		ahead:  wire.NewAhead(recvAhead),
	}
	c.out = NewSender(func(enc []byte) error { return c.send(enc) })
	go c.read()
	return c, nil
}

// conn is a wire.Conn over a gRPC stream. A reader goroutine owns RecvMsg
// and decodes batches ahead of Recv.
type conn struct {
	addr   string
	cc     *grpc.ClientConn
	stream grpc.ClientStream
	cancel context.CancelFunc
	hello  *wire.Hello

	ahead *wire.Ahead // the reader's batches; Finish when it ends, Close when Close starts

	out *Sender

	closeOnce sync.Once
	closeErr  error
}

func (c *conn) Hello() *wire.Hello { return c.hello }

func (c *conn) read() {
	for {
		var f frame
		if err := c.stream.RecvMsg(&f); err != nil {
			if err == io.EOF {
				c.ahead.Finish(io.EOF) // the resident ended the session
			} else {
				c.ahead.Finish(fmt.Errorf("transport: %s: %w", c.addr, err))
			}
			return
		}
		b := new(wire.Batch)
		if err := b.UnmarshalBinary(f.b); err != nil {
			c.ahead.Finish(fmt.Errorf("transport: %s: %w", c.addr, err))
			c.cancel() // a resident sending garbage: end the stream
			return
		}
		c.ahead.Put(b) // false once Close started: nobody will read it; drain to the end
	}
}

// Recv returns the next batch, io.EOF when the resident ended the session,
// or the error that ended the connection.
func (c *conn) Recv() (*wire.Batch, error) { return c.ahead.Recv() }

// Send encodes and sends cmd.
func (c *conn) Send(cmd *wire.Command) error { return c.out.Send(cmd) }

// send sends an encoded command (the Sender's lock held).
func (c *conn) send(enc []byte) error {
	if err := c.stream.SendMsg(&frame{enc}); err != nil {
		if err == io.EOF { // the stream is over; its status comes from the reader
			if err := c.ahead.Err(); err != nil && err != io.EOF {
				return err
			}
			return fmt.Errorf("transport: %s: connection ended", c.addr)
		}
		return fmt.Errorf("transport: %s: %w", c.addr, err)
	}
	return nil
}

// Close sends CBye, closes its side, waits (briefly) for the resident to
// end the stream, then closes the connection.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.ahead.Close()
		cut := time.AfterFunc(closeGrace, c.cancel)
		defer cut.Stop()
		c.out.Bye(func() { _ = c.stream.CloseSend() })
		<-c.ahead.Done() // the resident ends the stream, or cut does
		c.cancel()
		c.closeErr = c.cc.Close()
	})
	return c.closeErr
}
