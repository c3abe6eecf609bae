package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/fleet/embedded"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
)

// benchBatch is the batch every benchmark resident sends: 256 event
// packets of three values (an entity, an int, a short string), as a
// sensor's would be.
func benchBatch() *wire.Batch {
	b := &wire.Batch{Watermark: 1}
	for i := range 256 {
		b.Packets = append(b.Packets, wire.Packet{TS: int64(i + 1), Sensor: 0, Kind: wire.PEvent,
			Vals: []wire.Value{{Kind: wire.VEntity, N: 1}, {Kind: wire.VInt, N: uint64(i)}, {Kind: wire.VString, S: "getppid"}}})
	}
	b.Defs = []wire.EntityDef{{Key: 1, Type: 0, ID: "P1"}}
	return b
}

// sender is a resident whose every session sends batches batches, then
// ends.
type sender struct {
	batch   *wire.Batch
	batches int
}

func (s *sender) Hello() *wire.Hello {
	return &wire.Hello{Version: wire.Version, Name: "bench", Sensors: []string{"S"}, Types: []string{"T"}}
}
func (s *sender) Open() transport.Session { return &senderSession{s: s} }

type senderSession struct {
	s    *sender
	sent int
}

func (ss *senderSession) Apply(*wire.Command) error { return nil }
func (ss *senderSession) Recv(ctx context.Context) (*wire.Batch, error) {
	if ss.sent == ss.s.batches {
		return nil, io.EOF
	}
	ss.sent++
	b := *ss.s.batch
	b.Watermark = int64(ss.sent)
	return &b, nil
}
func (ss *senderSession) Close() {}

// drain receives every batch of conns until each ends, and returns the
// packets received.
func drain(b *testing.B, conns []wire.Conn) int {
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for {
				bt, err := c.Recv()
				if err != nil {
					if !errors.Is(err, io.EOF) {
						b.Error(err)
					}
					break
				}
				n += len(bt.Packets)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	return total
}

// BenchmarkFleet measures tuples per second from R residents to one
// monitor: through one embedded NATS server (each resident its own
// connection, the monitor one), against the direct gRPC path (each
// resident its own server on a unix socket, the monitor a connection to
// each). Each iteration moves R × 64 batches of 256 tuples; the metric is
// tuples/s. "durable" is the NATS path with durable sessions (query
// --resume): every frame through the JetStream stream. make bench-fleet runs it; compare the two paths' figures of
// one run (ratios), never absolute ones across machines.
func BenchmarkFleet(b *testing.B) {
	const perResident = 64
	for _, r := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("nats/residents=%d", r), func(b *testing.B) { benchNATS(b, r, perResident, false) })
		b.Run(fmt.Sprintf("durable/residents=%d", r), func(b *testing.B) { benchNATS(b, r, perResident, true) })
		b.Run(fmt.Sprintf("grpc/residents=%d", r), func(b *testing.B) { benchGRPC(b, r, perResident) })
	}
}

func benchNATS(b *testing.B, residents, batches int, durable bool) {
	s, err := embedded.Start(embedded.Options{Addr: "127.0.0.1:0", Data: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown()
	batch := benchBatch()
	for i := range residents {
		nc, err := Connect(s.URL(), "", "bench resident")
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		srv, err := Join(nc, fmt.Sprintf("h%d", i), &sender{batch: batch, batches: batches}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Stop()
	}
	mon, err := Connect(s.URL(), "", "bench monitor")
	if err != nil {
		b.Fatal(err)
	}
	defer mon.Close()
	o := DialOptions{Skew: time.Nanosecond}
	if durable {
		r, err := OpenResume(context.Background(), s.URL(), "", "bench", StreamOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		o.Resume = r
	}
	move(b, residents, func(i int) (wire.Conn, error) {
		return Dial(context.Background(), mon, fmt.Sprintf("h%d", i), o)
	})
}

// move opens a session with each of n residents (dial), takes all they
// send, closes them, as often as the benchmark wants, and reports the
// tuples per second.
func move(b *testing.B, n int, dial func(i int) (wire.Conn, error)) {
	tuples := 0
	start := time.Now()
	for b.Loop() {
		var conns []wire.Conn
		for i := range n {
			c, err := dial(i)
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
		}
		tuples += drain(b, conns)
		for _, c := range conns {
			c.Close()
		}
	}
	b.ReportMetric(float64(tuples)/time.Since(start).Seconds(), "tuples/s")
}

func benchGRPC(b *testing.B, residents, batches int) {
	batch := benchBatch()
	dir := b.TempDir()
	var addrs []string
	for i := range residents {
		addr := filepath.Join(dir, fmt.Sprintf("r%d.sock", i))
		srv, err := transport.NewServer(&sender{batch: batch, batches: batches}, transport.ServerOptions{})
		if err != nil {
			b.Fatal(err)
		}
		lis, err := net.Listen("unix", addr)
		if err != nil {
			b.Fatal(err)
		}
		go srv.Serve(lis)
		defer srv.Stop()
		addrs = append(addrs, addr)
	}
	move(b, residents, func(i int) (wire.Conn, error) { return transport.Dial(context.Background(), addrs[i], "") })
}
