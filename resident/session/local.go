package session

import (
	"context"

	"github.com/tqmon/tqmon/resident/wire"
)

// Endpoint is a resident's session as a connection uses it (both
// residents' Session types are one).
type Endpoint interface {
	Recv(context.Context) (*wire.Batch, error)
	Release(*wire.Batch)
	Apply(*wire.Command) error
	Close()
}

// Local returns an in-process connection to session s of a resident whose
// handshake hello returns: Recv receives its batches, Release gives them
// back, Send applies commands, Close ends it.
func Local(hello func() *wire.Hello, s Endpoint) wire.Conn { return &local{hello, s} }

type local struct {
	hello func() *wire.Hello
	s     Endpoint
}

func (c *local) Hello() *wire.Hello           { return c.hello() }
func (c *local) Recv() (*wire.Batch, error)   { return c.s.Recv(context.Background()) }
func (c *local) Release(b *wire.Batch)        { c.s.Release(b) }
func (c *local) Send(cmd *wire.Command) error { return c.s.Apply(cmd) }
func (c *local) Close() error                 { c.s.Close(); return nil }
