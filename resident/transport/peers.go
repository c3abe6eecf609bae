package transport

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
)

// Sessions per peer, and who gives way when every session is taken.
const (
	// MaxSessions is how many sessions a server serves at once: the
	// size of a resident's session table (session.MaxSessions), so that
	// the transport, not the table, decides who gets the last one.
	MaxSessions = session.MaxSessions
	// MaxSessionsPerPeer bounds the sessions one peer has open at once
	// over all its connections. A peer is a user for a unix socket (its
	// uid, SO_PEERCRED) and a remote IP address for TCP; one more is
	// refused before the handshake, naming the peer and this limit. So
	// no one peer can take more than a quarter of MaxSessions.
	MaxSessionsPerPeer = 16
	// IdleAfter is how long a session must have been idle before a new
	// session may evict it once all MaxSessions are taken. Idle: its
	// remote sent nothing but lease renewals for IdleAfter and holds
	// nothing enabled (no enable, trigger or sampler in force). A session
	// that holds something is watching and is never evicted; one that
	// holds nothing costs its resident only the entity relations' packets
	// (sent to every session) — so a monitor of entity relations alone
	// can be evicted, and is told so with an error, never a quiet end.
	IdleAfter = time.Second
)

// peerTable admits sessions: at most MaxSessionsPerPeer per peer, and
// at most MaxSessions in all, where a newcomer finding every session
// taken evicts the one idle the longest (idle for at least IdleAfter),
// or is refused when none is.
//
// Invariants (mu): byPeer[p] is the number of entries of live whose
// peer is p; len(live) ≤ max. An entry leaves live exactly
// once, by leave or as an eviction's victim, and gives its peer's count
// back then — so an evicted session that is slow to end (its stream
// stuck behind a remote that does not read) no longer counts against
// anyone.
type peerTable struct {
	now       func() int64 // monotonic ns (tests set their own)
	max       int          // MaxSessions (tests use fewer)
	idleAfter time.Duration

	mu     sync.Mutex
	byPeer map[string]int
	live   map[*admitted]struct{}
}

func newPeerTable(max int, idleAfter time.Duration) *peerTable {
	base := time.Now()
	return &peerTable{now: func() int64 { return int64(time.Since(base)) },
		max: max, idleAfter: idleAfter, byPeer: map[string]int{}, live: map[*admitted]struct{}{}}
}

// admitted is one session the table admitted.
type admitted struct {
	peer   string
	active atomic.Int64 // its last activity (the table's clock)
	// holds counts what the session has in force: enabling commands
	// carried out (CEnable, CEnableAll, CTrigger, CSample) less disabling
	// ones (CDisable, CDisableAll, CUntrigger, CUnsample). The residents
	// refuse to disable what the session does not hold, so it never goes
	// below what is really held.
	holds atomic.Int64
	// evict ends the session with the given error (set by opened, mu);
	// nil until the session is open, which keeps a session still in its
	// handshake from being evicted.
	evict func(error)
	gone  bool // it left live (mu)
}

// command notes a command other than a lease renewal on a's session,
// and what it changed when the resident carried it out (err == nil).
func (t *peerTable) command(a *admitted, kind wire.CommandKind, err error) {
	a.active.Store(t.now())
	if err != nil {
		return
	}
	switch kind {
	case wire.CEnable, wire.CEnableAll, wire.CTrigger, wire.CSample:
		a.holds.Add(1)
	case wire.CDisable, wire.CDisableAll, wire.CUntrigger, wire.CUnsample:
		a.holds.Add(-1)
	}
}

// idle reports whether a's session may be evicted at now.
func (t *peerTable) idle(a *admitted, now int64) bool {
	return a.evict != nil && a.holds.Load() <= 0 && now-a.active.Load() >= int64(t.idleAfter)
}

// admit admits a session from peer, or returns the error refusing it
// (a status for the stream). When every session is taken it evicts the
// session idle the longest and returns once that session is closed, so
// its slot in the resident's table is free for the newcomer.
func (t *peerTable) admit(peer string) (*admitted, error) {
	t.mu.Lock()
	if n := t.byPeer[peer]; n >= MaxSessionsPerPeer {
		t.mu.Unlock()
		return nil, status.Errorf(codes.ResourceExhausted,
			"transport: peer %s already has %d sessions open, the most one peer may have (MaxSessionsPerPeer)", peer, n)
	}
	var victim *admitted
	if len(t.live) >= t.max {
		now := t.now()
		for a := range t.live {
			if t.idle(a, now) && (victim == nil || a.active.Load() < victim.active.Load()) {
				victim = a
			}
		}
		if victim == nil {
			t.mu.Unlock()
			return nil, status.Errorf(codes.ResourceExhausted,
				"transport: all %d sessions are taken (MaxSessions) and none is idle (holding nothing enabled, no command but lease renewals for %v); try again later",
				t.max, t.idleAfter)
		}
		t.removeLocked(victim)
	}
	a := &admitted{peer: peer}
	a.active.Store(t.now())
	t.live[a] = struct{}{}
	t.byPeer[peer]++
	t.mu.Unlock()
	if victim != nil {
		idle := time.Duration(t.now() - victim.active.Load()).Round(time.Millisecond)
		victim.evict(status.Errorf(codes.ResourceExhausted,
			"transport: session evicted: idle for %v (nothing enabled, no command but lease renewals) when all %d sessions were taken and peer %s asked for one",
			idle, t.max, peer))
	}
	return a, nil
}

// opened makes a's session evictable: evict ends it.
func (t *peerTable) opened(a *admitted, evict func(error)) {
	t.mu.Lock()
	a.evict = evict
	t.mu.Unlock()
}

// leave takes a's session off the table when it ends (if an eviction
// has not already).
func (t *peerTable) leave(a *admitted) {
	t.mu.Lock()
	t.removeLocked(a)
	t.mu.Unlock()
}

func (t *peerTable) removeLocked(a *admitted) {
	if a.gone {
		return
	}
	a.gone = true
	delete(t.live, a)
	if t.byPeer[a.peer]--; t.byPeer[a.peer] <= 0 {
		delete(t.byPeer, a.peer)
	}
}

// peerOf names the peer at the other end of an accepted connection: its
// uid for a unix socket, its IP address for TCP, else its address.
func peerOf(c net.Conn) string {
	switch c := c.(type) {
	case *net.UnixConn:
		p, err := unixPeer(c)
		if err != nil {
			// Unknown credentials: one peer for all such connections,
			// so the limit still holds.
			return "unix (credentials unknown)"
		}
		return p
	case *net.TCPConn:
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			return a.IP.String()
		}
	}
	return fmt.Sprintf("%s %s", c.RemoteAddr().Network(), c.RemoteAddr())
}
