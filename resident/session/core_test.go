package session

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/wire"
)

// A lease renewal counts as applied but leaves the time batches say the
// commands were applied: the enables before it have been in force since
// their own application. Before, a renewal moved AppliedAt, and a remote
// whose first batch came after it started its observation there,
// dropping the packets sent in between (TestConsumerBehindLosesNothing
// saw 35,331 of 300,000).
func TestLeaseKeepsAppliedAt(t *testing.T) {
	now := int64(10)
	var c Core
	c.Init(1, func() int64 { return now }, nil)
	var mu sync.Mutex
	apply := func(*wire.Command) error { return nil }
	if err := c.Command(&mu, &wire.Command{Kind: wire.CLease, Period: 1e9}, apply, nil); err != nil {
		t.Fatal(err)
	}
	now = 20
	if err := c.Command(&mu, &wire.Command{Kind: wire.CEnableAll}, apply, nil); err != nil {
		t.Fatal(err)
	}
	now = 30
	if err := c.Command(&mu, &wire.Command{Kind: wire.CLease, Period: 1e9}, apply, nil); err != nil {
		t.Fatal(err)
	}
	c.Deliver([]wire.Packet{{TS: 35}}, nil, 40, nil, 40, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := c.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.Applied != 3 || b.AppliedAt != 20 {
		t.Errorf("after a lease, an enable and a lease: applied %d at %d, want 3 at 20", b.Applied, b.AppliedAt)
	}
}
