package testkit

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Routed waits, at most d, until a message published on pub reaches a
// subscriber on sub: the servers the two are connected to (nodes of one
// cluster) have routes, and sub's subscriptions have crossed them.
func Routed(t testing.TB, pub, sub *nats.Conn, d time.Duration) {
	t.Helper()
	inbox := nats.NewInbox()
	s, err := sub.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unsubscribe()
	deadline := time.Now().Add(d)
	for {
		if err := pub.Publish(inbox, []byte("routed")); err != nil {
			t.Fatal(err)
		}
		if m, err := s.NextMsg(100 * time.Millisecond); err == nil {
			if string(m.Data) != "routed" {
				t.Fatalf("message %q", m.Data)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no message from %s reached %s in %v", pub.ConnectedUrl(), sub.ConnectedUrl(), d)
		}
	}
}
