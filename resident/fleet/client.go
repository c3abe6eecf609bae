package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
)

// recvAhead is how many decoded batches a connection holds for Recv (as
// over gRPC); past that its subscription's callback waits, and the
// resident's window (Window) bounds what waits in the NATS client.
const recvAhead = 4

// requestWait bounds a control request (open, a command).
const requestWait = 5 * time.Second

// closeGrace bounds how long Close waits for the resident's end frame.
const closeGrace = 2 * time.Second

// DialOptions shape a monitor's connection.
type DialOptions struct {
	// Security secures DialHosts' connection to the NATS server (Connect).
	Security transport.Security
	// Silence: with neither a frame nor a heartbeat for this long the
	// session is lost (0: Silence).
	Silence time.Duration
	// Skew, when positive, is the clock-skew bound to state for the host
	// instead of measuring one (Conn.Skew).
	Skew time.Duration
	// Resume, when set, makes the session durable (durable.go): its
	// frames go through the stream, where a monitor started again finds
	// them. Session, when set, is the durable session to resume (its
	// frames are read again from the first) rather than one to open.
	Resume  *Resume
	Session string
}

// clockProbes is how many round trips Dial measures a host's clock over
// (the one with the shortest round trip is kept).
const clockProbes = 5

// measureSkew bounds how far host's clock (the one its tuples are
// stamped with) is from this process's wall clock: over clockProbes
// requests to tqmon.H.clock, the host's answer T was read between t0 and
// t1 here, so its offset is T − (t0+t1)/2 give or take (t1−t0)/2; the
// bound is |offset| + (t1−t0)/2 of the shortest round trip. A host that
// does not answer (an older resident) has no bound: ok is false.
func measureSkew(nc *nats.Conn, host string, wait time.Duration) (bound time.Duration, ok bool) {
	best := time.Duration(-1)
	for range clockProbes {
		t0 := time.Now()
		m, err := nc.Request(subj(host, "clock"), nil, wait)
		t1 := time.Now()
		if err != nil {
			break
		}
		T, err := strconv.ParseInt(string(m.Data), 10, 64)
		if err != nil {
			break
		}
		half := t1.Sub(t0) / 2
		off := time.Duration(T - (t0.UnixNano() + half.Nanoseconds()))
		b := max(off, -off) + half
		if best < 0 || half < best {
			best, bound = half, b
		}
	}
	return bound, best >= 0
}

// LostError is a session lost on the way: a missing frame or silence.
type LostError struct {
	Host string
	Why  string
}

func (e *LostError) Error() string { return "fleet: host " + e.Host + ": " + e.Why }

// Dial opens a session with the resident serving host on nc and reads
// its Hello. ctx bounds the handshake only. The Conn's Recv returns
// io.EOF when the resident ends the session normally, a *LostError on a
// missing frame or silence; Send may be called from several goroutines.
func Dial(ctx context.Context, nc *nats.Conn, host string, o DialOptions) (wire.Conn, error) {
	if err := CheckHost(host); err != nil {
		return nil, err
	}
	if o.Silence <= 0 {
		o.Silence = Silence
	}

	where := "fleet: host " + host
	c := &conn{nc: nc, host: host, id: cmp.Or(o.Session, nuid.Next()), ahead: wire.NewAhead(recvAhead), silence: o.Silence, durable: o.Resume}
	c.out = transport.NewSender(c.send)
	sub, err := nc.Subscribe(subj(host, "s", c.id, "b"), c.frame)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	c.sub = sub
	// The callback may wait for Recv; what waits meanwhile is bounded by
	// the resident's window, and past these limits NATS drops — a missing
	// frame, reported as a lost session.
	sub.SetPendingLimits(4*Window, 4*wire.MaxFrame*Window/16)
	wait := requestWait
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
		wait = time.Until(d)
	}
	req := nats.NewMsg(subj(host, "open"))
	req.Data = []byte(c.id)
	if o.Resume != nil {
		req.Header.Set(hDurable, "1")
		if o.Session != "" {
			req.Header.Set(hResume, "1")
		}
	}
	reply, err := nc.RequestMsg(req, wait)
	for deadline := time.Now().Add(wait); o.Session != "" && errors.Is(err, nats.ErrNoResponders) && time.Now().Before(deadline); {
		// A resident that just reconnected (its node died) may not be
		// reachable from here yet: a session is not taken for gone
		// until it has had the time a request has.
		time.Sleep(50 * time.Millisecond)
		reply, err = nc.RequestMsg(req, wait)
	}
	var helloData []byte
	switch {
	case o.Session != "":
		// Resuming: the session's frames are read again from the first,
		// its Hello with them; the resident may have gone (the session
		// ended while the monitor was away), and what it sent is still
		// in the stream, its end frame last.
		if err != nil || reply.Header.Get(hError) != "" {
			c.gone = true
		}
		if helloData, err = storedHello(ctx, o.Resume.st, host, c.id, o.Resume.Name); err != nil {
			sub.Unsubscribe()
			return nil, err
		}
	case err != nil:
		sub.Unsubscribe()
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("%s: no resident serves this host on %s", where, nc.ConnectedUrlRedacted())
		}
		return nil, fmt.Errorf("%s: opening a session: %w", where, err)
	case reply.Header.Get(hError) != "":
		sub.Unsubscribe()
		return nil, fmt.Errorf("%s: the resident refused the session: %s", where, reply.Header.Get(hError))
	default:
		helloData = reply.Data
	}
	hello, err := transport.ParseHello(where, helloData)
	if err != nil {
		sub.Unsubscribe()
		c.out.Bye(nil)
		return nil, err
	}
	// The monitor names the resident by its host: two demo hosts both
	// announce "demo".
	hello.Name = host
	c.hello = hello
	c.skew = o.Skew
	if c.skew <= 0 {
		c.skew, _ = measureSkew(nc, host, wait)
	}
	c.opened = time.Now()
	c.heard.Store(c.opened.UnixNano())
	if o.Resume != nil {
		if err := c.consume(ctx, o.Resume.st); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: reading the stream: %w", where, err)
		}
	}
	go c.watch()
	return c, nil
}

// consumeBeat is the idle heartbeat the stream's server sends consume's
// reader. The reader's consumer lives on one node of a cluster, picked
// at random among the stream's (a node that just died may still be
// picked); when that node goes, nothing says so but the heartbeats that
// stop: after two missed the ordered consumer is made again, on a live
// node, from where it was. That must take well under Silence, or a
// session whose resident has ended (no more beats: its end frame waits
// in the stream) is taken for lost while its frames are safe. nats.go's
// default heartbeat, 5 s, made it 10 s — Silence itself: TestFleetResume's
// "node killed, replicas 3" lost a host so ("nothing heard from the
// resident for 10s", or the killed monitor ended on its own and forgot
// its state). At 1 s it is 2 s and a round trip, a fifth of Silence
// (TestDurableReaderNodeDies); the server's heartbeats cost one small
// message a second per idle session.
const consumeBeat = time.Second

// consume reads the durable session's frames from the stream, from the
// first, into frame (as a session that is not durable gets them from
// core NATS), until the conn is done.
func (c *conn) consume(ctx context.Context, st jetstream.Stream) error {
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{journalSubject(c.host, c.id)}})
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(Window), jetstream.PullHeartbeat(consumeBeat))
	if err != nil {
		return err
	}
	c.stopRead = it.Stop
	go func() {
		for {
			m, err := it.Next()
			if err != nil {
				if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
					return
				}
				c.lost("reading the stream %s: %v", Stream, err)
				return
			}
			c.frame(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
		}
	}()
	return nil
}

// conn is a wire.Conn over NATS. The subscription's callback (one
// goroutine) checks frame numbers, decodes batches ahead of Recv and
// acknowledges each once queued.
type conn struct {
	nc      *nats.Conn
	host    string
	id      string
	sub     *nats.Subscription
	hello   *wire.Hello
	ahead   *wire.Ahead
	out     *transport.Sender
	silence time.Duration
	opened  time.Time     // when Dial had the Hello
	skew    time.Duration // the clock-skew bound stated for the host (Skew)

	seq   uint64       // the last frame number taken (the callback's)
	heard atomic.Int64 // when the resident was last heard (unix ns)
	// gap is when frames were first found missing (unix ns; 0: none),
	// asked when they were last asked for again (the callback's).
	gap   atomic.Int64
	asked time.Time
	busy  atomic.Bool // the callback waits for Recv: not silence

	// durable, when set, makes frames come from the stream (consume),
	// stopRead stops reading it; gone: a resumed session the resident no
	// longer has (what it sent is in the stream): nothing is sent to it.
	// Commands other than CLease and CBye are numbered (cmdN, under
	// cmdMu; num is the one being sent).
	durable  *Resume
	stopRead func()
	gone     bool
	cmdMu    sync.Mutex
	cmdN     uint64
	num      atomic.Uint64

	closeOnce sync.Once
	release   func()     // after Close (DialHosts: the last closes the NATS connection)
	late      *discovery // DialHosts's: the hosts its glob matched found late
}

// LateHosts are the hosts the glob DialHosts was given matches that were
// not found when it dialed — found later, while the sessions were open:
// not watched, so nothing of them was observed (remote.LateHosts). Nil
// for a Conn from Dial (a host named, no glob).
func (c *conn) LateHosts() []string {
	if c.late == nil {
		return nil
	}
	return c.late.lateHosts()
}

func (c *conn) Hello() *wire.Hello { return c.hello }

// Durable reports whether the session is durable (a monitor that can
// resume): its frames are read again from the first when it resumes, so
// a program is not placed at the host (remote: a plan fragment started
// again would answer twice).
func (c *conn) Durable() bool { return c.durable != nil }

// Skew is the clock-skew bound stated for the host (DialOptions.Skew, or
// measured by Dial; 0 when the host does not answer tqmon.H.clock).
func (c *conn) Skew() time.Duration { return c.skew }

func (c *conn) lost(format string, args ...any) {
	c.ahead.Finish(&LostError{Host: c.host, Why: fmt.Sprintf(format, args...)})
}

func (c *conn) frame(m *nats.Msg) {
	c.heard.Store(time.Now().UnixNano())
	select {
	case <-c.ahead.Done():
		return
	default:
	}
	if m.Header.Get(hBeat) != "" && c.durable != nil {
		return // the stream has the frames: nothing is asked for again
	}
	if m.Header.Get(hBeat) != "" {
		// A beat says the last frame published: frames after c.seq that
		// never came (the last ones lost) are asked for again.
		if last, err := strconv.ParseUint(m.Header.Get(hLast), 10, 64); err == nil && last > c.seq {
			c.missing()
		}
		return
	}
	n, err := strconv.ParseUint(m.Header.Get(hSeq), 10, 64)
	if err != nil {
		c.lost("a frame without a sequence number")
		return
	}
	if n <= c.seq {
		return // sent again, and already taken
	}
	if n != c.seq+1 && c.durable != nil {
		c.lost("the stream %s no longer holds frames %d to %d of the session (its retention dropped them)", Stream, c.seq+1, n-1)
		return
	}
	if n != c.seq+1 {
		// A frame is missing: NATS lost it (a server that died with it
		// in flight, a slow consumer's drop). The resident keeps what
		// is not acknowledged and sends it again when asked; this one
		// and any after it come again then, in order.
		c.missing()
		return
	}
	c.seq = n
	c.gap.Store(0)
	if why, end := m.Header[hEnd]; end {
		c.nc.Publish(subj(c.host, "s", c.id, "a"), strconv.AppendUint(nil, n, 10))
		if len(why) == 0 || why[0] == "" {
			c.ahead.Finish(io.EOF)
		} else {
			c.ahead.Finish(fmt.Errorf("fleet: host %s: session ended: %s", c.host, why[0]))
		}
		return
	}
	b := new(wire.Batch)
	if err := b.UnmarshalBinary(m.Data); err != nil {
		c.ahead.Finish(fmt.Errorf("fleet: host %s: %w", c.host, err))
		return
	}
	c.busy.Store(true)
	ok := c.ahead.Put(b)
	c.busy.Store(false)
	c.heard.Store(time.Now().UnixNano())
	if ok && c.durable == nil {
		c.nc.Publish(subj(c.host, "s", c.id, "a"), strconv.AppendUint(nil, n, 10))
	}
}

// missing asks the resident to send again what followed frame c.seq, at
// most every GapWait/6, and notes since when frames are missing (watch
// reports the session lost after GapWait).
func (c *conn) missing() {

	now := time.Now()
	c.gap.CompareAndSwap(0, now.UnixNano())
	if now.Sub(c.asked) < GapWait/6 {
		return
	}
	c.asked = now
	c.nc.Publish(subj(c.host, "s", c.id, "r"), strconv.AppendUint(nil, c.seq, 10))
}

// watch reports the session lost after Silence without a word from the
// resident (time spent waiting for Recv does not count).
func (c *conn) watch() {
	t := time.NewTicker(c.silence / 10)
	defer t.Stop()
	for {
		select {
		case <-c.ahead.Done():
			return
		case <-c.ahead.Closing():
			return
		case <-t.C:
			if c.busy.Load() {
				c.heard.Store(time.Now().UnixNano())
				continue
			}
			if g := c.gap.Load(); g != 0 && time.Since(time.Unix(0, g)) >= GapWait {
				c.lost("session lost: frames missing for %v, not sent again (the resident no longer kept them)", GapWait)
				return
			}
			if quiet := time.Since(time.Unix(0, c.heard.Load())); quiet >= c.silence {
				c.lost("session lost: nothing heard from the resident for %v", quiet.Round(time.Millisecond))
				return
			}
		}
	}
}

func (c *conn) Recv() (*wire.Batch, error) { return c.ahead.Recv() }

func (c *conn) Send(cmd *wire.Command) error {
	if c.durable == nil {
		return c.out.Send(cmd)
	}
	if c.gone {
		return nil // the session ended while the monitor was away
	}
	c.cmdMu.Lock()
	defer c.cmdMu.Unlock()
	if cmd.Kind != wire.CLease && cmd.Kind != wire.CBye {
		c.cmdN++
		c.num.Store(c.cmdN)
		defer c.num.Store(0)
	}
	return c.out.Send(cmd)
}

// send sends one encoded command by request/reply (the Sender's lock held).
func (c *conn) send(enc []byte) error {
	if err := c.ahead.Err(); err == io.EOF {
		// The resident ended the session (its end frame came): there is
		// nobody to tell, and asking would wait for a reply that may
		// never come.
		return nil
	} else if err != nil {
		return err
	}
	req := nats.NewMsg(subj(c.host, "s", c.id, "c"))
	req.Data = enc
	if n := c.num.Load(); n > 0 {
		req.Header.Set(hCmd, strconv.FormatUint(n, 10))
	}
	reply, err := c.nc.RequestMsg(req, requestWait)
	for deadline := c.opened.Add(requestWait); errors.Is(err, nats.ErrNoResponders) && time.Now().Before(deadline) && !c.closing(); {
		// In a cluster the session's subjects, subscribed by the
		// resident on its node as it opened the session, reach this
		// client's node a moment later: ask again until they have —
		// only while the session is young; later, no responder means
		// the resident is gone.
		time.Sleep(10 * time.Millisecond)
		reply, err = c.nc.RequestMsg(req, requestWait)
	}
	if err != nil {
		return fmt.Errorf("fleet: host %s: command: %w", c.host, err)
	}
	if why := reply.Header.Get(hError); why != "" {
		return fmt.Errorf("fleet: host %s: %s", c.host, why)
	}
	return nil
}

// closing reports whether Close was called (a CBye is not asked again:
// a resident that does not answer it is gone).
func (c *conn) closing() bool {
	select {
	case <-c.ahead.Closing():
		return true
	default:
		return false
	}
}

// Close sends CBye and leaves.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.ahead.Close()
		if c.stopRead != nil {
			c.stopRead()
		}
		c.cmdMu.Lock()
		if !c.gone {
			c.out.Bye(nil)
		}
		c.cmdMu.Unlock()
		c.ahead.Finish(wire.ErrClosed)
		c.sub.Unsubscribe()
		if c.release != nil {
			c.release()
		}
	})
	return nil
}

// DialHosts connects to the NATS server at url (with token when set),
// finds the hosts glob matches (Hosts) and opens a session with each.
// The NATS connection closes with the last session. On error nothing
// stays open.
//
// A host glob matches that was not found then — one that joined later,
// or whose answer had not reached this client's node yet (in a cluster a
// host's subscriptions reach the other nodes a moment after it joins) —
// is not watched; while the sessions are open the monitor keeps asking
// (every Rediscover), and each such host is a late one (LateHosts), so
// that the run says it was not observed rather than answering without
// it in silence.
func DialHosts(ctx context.Context, url, token, glob string, o DialOptions) ([]wire.Conn, error) {
	nc, err := Connect(url, token, "tqmon monitor", o.Security)
	if err != nil {
		return nil, err
	}
	r := o.Resume
	var d *discovery
	var hosts []string
	if r != nil && r.Found {
		// Resuming: the hosts of the run before, each its session.
		hosts = slices.Sorted(maps.Keys(r.State.Hosts))
		d = &discovery{done: make(chan struct{})}
		d.once.Do(func() { close(d.done) })
	} else if d, err = discover(ctx, nc, glob); err != nil {
		nc.Close()
		return nil, err
	} else {
		hosts = d.hosts
	}
	var (
		mu   sync.Mutex
		open = len(hosts)
	)
	release := func() {
		mu.Lock()
		defer mu.Unlock()
		if open--; open == 0 {
			d.stop()
			nc.Close()
		}
	}
	var conns []wire.Conn
	for _, h := range hosts {
		if r != nil && r.Found {
			o.Session = r.State.Hosts[h]
		}
		c, err := Dial(ctx, nc, h, o)
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			d.stop()
			nc.Close()
			return nil, err
		}
		c.(*conn).release = release
		c.(*conn).late = d
		conns = append(conns, c)
	}
	if r != nil && !r.Found {
		// Each host's session saved before anything of them is printed:
		// a monitor killed from here on is resumed.
		r.State.Hosts = map[string]string{}
		for i, h := range hosts {
			r.State.Hosts[h] = conns[i].(*conn).id
		}
		if err := r.Save(ctx); err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, err
		}
	}
	if d.sub != nil {
		go d.watch(hosts)
	}
	return conns, nil
}

// DiscoverWait is how long Hosts collects answers.
const DiscoverWait = 300 * time.Millisecond

// Rediscover is how often a monitor's DialHosts asks again which hosts
// are served while its sessions are open (LateHosts).
const Rediscover = 250 * time.Millisecond

// Hosts returns, sorted, the hosts served on nc whose names match glob
// (path.Match syntax: web-*, h[12]); an empty glob matches all.
func Hosts(ctx context.Context, nc *nats.Conn, glob string) ([]string, error) {
	d, err := discover(ctx, nc, glob)
	if err != nil {
		return nil, err
	}
	d.stop()
	return d.hosts, nil
}

// discovery asks which hosts are served (tqmon.discover) and collects
// the answers: those within DiscoverWait are the hosts found (hosts);
// the others matching the glob, answering later or to a later request
// (watch), are late (LateHosts).
type discovery struct {
	nc    *nats.Conn
	glob  string
	inbox string
	sub   *nats.Subscription
	ch    chan *nats.Msg
	done  chan struct{}
	once  sync.Once
	hosts []string // found within DiscoverWait, sorted

	mu   sync.Mutex
	late map[string]bool
}

func discover(ctx context.Context, nc *nats.Conn, glob string) (*discovery, error) {
	if glob == "" {
		glob = "*"
	}
	if _, err := path.Match(glob, ""); err != nil {
		return nil, fmt.Errorf("fleet: --hosts %q: %w", glob, err)
	}
	d := &discovery{nc: nc, glob: glob, inbox: nc.NewRespInbox(), ch: make(chan *nats.Msg, 1024), done: make(chan struct{})}
	var err error
	d.sub, err = nc.ChanSubscribe(d.inbox, d.ch)
	if err != nil {
		return nil, fmt.Errorf("fleet: discovering hosts: %w", err)
	}
	if err := nc.PublishRequest(discoverSubject, d.inbox, nil); err != nil {
		d.stop()
		return nil, fmt.Errorf("fleet: discovering hosts: %w", err)
	}
	t := time.NewTimer(DiscoverWait)
	defer t.Stop()
	seen := map[string]bool{}
	for {
		select {
		case m := <-d.ch:
			if h := string(m.Data); CheckHost(h) == nil {
				seen[h] = true
			}
			continue
		case <-t.C:
		case <-ctx.Done():
			d.stop()
			return nil, ctx.Err()
		}
		break
	}
	var all []string
	for h := range seen {
		all = append(all, h)
		if ok, _ := path.Match(glob, h); ok {
			d.hosts = append(d.hosts, h)
		}
	}
	sort.Strings(all)
	sort.Strings(d.hosts)
	if len(d.hosts) == 0 {
		d.stop()
		if len(all) == 0 {
			return nil, fmt.Errorf("fleet: no host is served on %s", nc.ConnectedUrlRedacted())
		}
		return nil, fmt.Errorf("fleet: no host on %s matches %q (hosts: %v)", nc.ConnectedUrlRedacted(), glob, all)
	}
	return d, nil
}

// watch asks again every Rediscover until stop, and notes each host
// answering that matches the glob and is not one of found.
func (d *discovery) watch(found []string) {
	t := time.NewTicker(Rediscover)
	defer t.Stop()
	for {
		select {
		case <-d.done:
			return
		case m := <-d.ch:
			h := string(m.Data)
			if ok, _ := path.Match(d.glob, h); !ok || CheckHost(h) != nil || slices.Contains(found, h) {
				continue
			}
			d.mu.Lock()
			if d.late == nil {
				d.late = map[string]bool{}
			}
			d.late[h] = true
			d.mu.Unlock()
		case <-t.C:
			d.nc.PublishRequest(discoverSubject, d.inbox, nil)
		}
	}
}

func (d *discovery) stop() {
	d.once.Do(func() {
		close(d.done)
		d.sub.Unsubscribe()
	})
}

// lateHosts are the hosts found late, sorted.
func (d *discovery) lateHosts() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var hs []string
	for h := range d.late {
		hs = append(hs, h)
	}
	sort.Strings(hs)
	return hs
}

// Connect connects to the NATS server at url, with token when set,
// secured as sec (at most one) says: TLS, and whether a token may go in
// clear to a server that is not loopback (secureOptions).
func Connect(url, token, name string, sec ...transport.Security) (*nats.Conn, error) {
	var s transport.Security
	if len(sec) > 0 {
		s = sec[0]
	}
	secure, err := secureOptions(url, token, s)
	if err != nil {
		return nil, err
	}
	// A client whose server goes away reconnects to another node of the
	// cluster (url may list several, comma-separated; the others are
	// learned from the first) for as long as it takes: a host's frames
	// lost meanwhile are sent again (KeepBytes), and a host not heard
	// from is lost after its silence bound.
	opts := []nats.Option{nats.Name(name), nats.Timeout(5 * time.Second),
		nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond), nats.ReconnectJitter(50*time.Millisecond, 0)}
	if token != "" {
		opts = append(opts, nats.Token(token))
	}
	nc, err := nats.Connect(url, append(opts, secure...)...)
	if err != nil {
		return nil, transport.TLSHint(fmt.Errorf("fleet: connecting to %s: %w", url, err))
	}
	return nc, nil
}
