package embedded

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// A server with a token refuses clients without it; JetStream is on and
// its store is where Data says.
func TestTokenAndJetStream(t *testing.T) {
	dir := t.TempDir()
	s, err := Start(Options{Addr: "127.0.0.1:0", Data: dir, Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if !s.JetStream() {
		t.Fatal("JetStream is off")
	}
	if _, err := nats.Connect(s.URL()); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("without the token: %v", err)
	}
	if _, err := nats.Connect(s.URL(), nats.Token("wrong")); err == nil {
		t.Fatal("a wrong token was accepted")
	}
	nc, err := nats.Connect(s.URL(), nats.Token("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if nc.MaxPayload() != 8<<20 {
		t.Errorf("max payload %d, want 8 MiB", nc.MaxPayload())
	}
}

// A bad address is refused with what is wrong.
func TestBadAddr(t *testing.T) {
	for _, a := range []string{"nope", "127.0.0.1:x", "127.0.0.1:70000"} {
		if _, err := Start(Options{Addr: a}); err == nil || !strings.Contains(err.Error(), a) {
			t.Errorf("%q: %v", a, err)
		}
	}
}
