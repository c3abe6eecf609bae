package transport

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A unix socket is 0600 from the moment it can be connected to (it is
// bound in a private directory and renamed into place), leaves nothing
// behind, and is removed when the listener closes.
func TestListenUnixPrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.sock")
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a 0600 socket", fi.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want the socket alone", len(ents))
	}
	if got := lis.Addr().String(); got != path {
		t.Errorf("Addr %q, want %q", got, path)
	}
	go func() {
		if c, err := lis.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	lis.Close()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("socket left after Close: %v", err)
	}
}

// Connections that never authenticate are capped and closed, and count
// as refused.
func TestUnauthenticatedCap(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int64
	g := &guard{Listener: lis, refused: &refused}
	defer g.Close()
	go func() {
		for {
			if _, err := g.Accept(); err != nil {
				return
			}
		}
	}()
	var conns []net.Conn
	for range MaxUnauthenticated + 4 {
		c, err := net.Dial("tcp", lis.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// The ones over the cap are closed at once: a read sees EOF.
	closed := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		var b [1]byte
		if _, err := c.Read(b[:]); err != nil && !isTimeout(err) {
			closed++
		}
		c.Close()
	}
	if closed != 4 || refused.Load() != 4 {
		t.Errorf("%d connections closed, %d refused; want 4 over the cap of %d", closed, refused.Load(), MaxUnauthenticated)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// Token: the flag, else the file, else $TQMON_TOKEN; flag and file
// together are refused.
func TestToken(t *testing.T) {
	f := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(f, []byte("  from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(TokenEnv, "from-env")
	for _, c := range []struct{ flag, file, want string }{
		{"flag", "", "flag"}, {"", f, "from-file"}, {"", "", "from-env"},
	} {
		if got, err := Token(c.flag, c.file); err != nil || got != c.want {
			t.Errorf("Token(%q, %q) = %q, %v; want %q", c.flag, c.file, got, err, c.want)
		}
	}
	if _, err := Token("flag", f); err == nil {
		t.Error("Token with flag and file: no error")
	}
}

// TestServeAt: the glue of a monitored program serves at a unix socket
// until its context ends, and refuses a TCP address without a token
// before listening.
func TestServeAt(t *testing.T) {
	if _, err := ServeAt(context.Background(), "127.0.0.1:0", newFake(), ServerOptions{}); err == nil ||
		!strings.Contains(err.Error(), "needs a shared token") {
		t.Errorf("TCP without a token: %v", err)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done, err := ServeAt(ctx, sock, newFake(), ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("not listening: %v", err)
	}
	c.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("stopped with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still serving 10s after its context ended")
	}
}
