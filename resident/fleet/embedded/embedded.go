// Package embedded runs a NATS server with JetStream storage inside this
// process: what `tqmon serve` runs for a fleet to join, and what tests
// start on loopback.
//
// Bounds: the server listens where Options.Addr says (default
// 127.0.0.1:4222; port 0 picks a free one); JetStream keeps its store
// under Options.Data (a temporary directory when empty, removed on
// Shutdown), at most MaxStore bytes on disk and MaxMemory in memory; a
// client presents Options.Token when one is set. No signal handlers are
// installed and nothing is logged unless Logf is set. With Options.TLS,
// clients and, on a cluster's node, the routes to the other nodes speak
// TLS only (routeTLS).
package embedded

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Defaults.
const (
	DefaultAddr      = "127.0.0.1:4222"
	DefaultMaxStore  = 1 << 30 // 1 GiB of JetStream storage on disk
	DefaultMaxMemory = 64 << 20
	readyTimeout     = 10 * time.Second
	clusterTimeout   = 30 * time.Second
)

// tlsTimeout is how many seconds a client has for its TLS handshake.
const tlsTimeout = 2.0

// Options shape the server.
type Options struct {
	// Addr is HOST:PORT to listen on (default DefaultAddr; port 0: any).
	Addr string
	// Data is JetStream's store directory ("" : a temporary one).
	Data string
	// Token, when set, is what clients must present (nats.Token).
	Token string
	// MaxStore and MaxMemory bound JetStream (0: the defaults).
	MaxStore, MaxMemory int64
	// Name is the server's name (default "tqmon"); a cluster's nodes
	// need names of their own.
	Name string
	// Cluster, when set, makes the server a node of a NATS cluster.
	Cluster *Cluster
	// TLS, when set, makes every client connection TLS
	// (transport.TLSFiles.ServerConfig): clients connect to tls://…
	// (URL says so), and with ClientAuth set only clients presenting a
	// certificate its CAs signed get in (mutual TLS). On a cluster's node
	// it makes the routes TLS too, with both ends verified (routeTLS).
	TLS *tls.Config
	// Logf, when set, receives the server's notices, warnings and errors
	// (a route refused in its TLS handshake is one), one line each.
	Logf func(format string, args ...any)
}

// Cluster makes a server one node of a NATS cluster: it listens for
// routes from the other nodes at Addr (HOST:PORT; port 0: any, see
// Server.RouteURL) and connects to Routes (nats-route://HOST:PORT of
// nodes already running; the others are found from them). Clients of
// any node reach the hosts of every node; a client that loses its node
// reconnects to another (fleet.Connect).
type Cluster struct {
	Name   string // the cluster's name, the same on every node (default "tqmon")
	Addr   string
	Routes []string
}

// Server is a running embedded server.
type Server struct {
	ns  *server.Server
	tmp string // a temporary store directory to remove
}

// Start starts the server and waits until it accepts clients.
func Start(o Options) (*Server, error) {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	host, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("embedded: address %q: want HOST:PORT: %v", o.Addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return nil, fmt.Errorf("embedded: address %q: bad port", o.Addr)
	}
	if p == 0 {
		p = server.RANDOM_PORT
	}
	s := &Server{}
	if o.Data == "" {
		if s.tmp, err = os.MkdirTemp("", "tqmon-nats-"); err != nil {
			return nil, fmt.Errorf("embedded: %w", err)
		}
		o.Data = s.tmp
	}
	if o.MaxStore == 0 {
		o.MaxStore = DefaultMaxStore
	}
	if o.MaxMemory == 0 {
		o.MaxMemory = DefaultMaxMemory
	}
	if o.Name == "" {
		o.Name = "tqmon"
	}
	opts := &server.Options{
		ServerName:         o.Name,
		Host:               host,
		Port:               p,
		JetStream:          true,
		StoreDir:           o.Data,
		JetStreamMaxStore:  o.MaxStore,
		JetStreamMaxMemory: o.MaxMemory,
		Authorization:      o.Token,
		NoSigs:             true,
		NoLog:              true,
		MaxPayload:         8 << 20, // a wire frame (wire.MaxFrame, 4 MiB) and its headers fit
	}
	if o.TLS != nil {
		// nats-server reads TLSConfig (and ClientAuth for verify) as its
		// tls block would set them; TLSTimeout bounds the handshake.
		opts.TLSConfig = o.TLS
		opts.TLSTimeout = tlsTimeout
		opts.TLSVerify = o.TLS.ClientAuth == tls.RequireAndVerifyClientCert
	}
	if c := o.Cluster; c != nil {
		if err := cluster(opts, c); err != nil {
			s.cleanup()
			return nil, err
		}
		if o.TLS != nil {
			opts.Cluster.TLSConfig = routeTLS(o.TLS)
			opts.Cluster.TLSTimeout = tlsTimeout
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		s.cleanup()
		return nil, fmt.Errorf("embedded: %w", err)
	}
	if o.Logf != nil {
		ns.SetLoggerV2(logger(o.Logf), false, false, false)
	}
	s.ns = ns
	ns.Start()
	if !ns.ReadyForConnections(readyTimeout) {
		ns.Shutdown()
		s.cleanup()
		return nil, errors.New("embedded: the NATS server did not become ready (is the address in use?)")
	}
	return s, nil
}

// routeTLS is a node's TLS for its routes, made from its clients' (one
// set of files, transport.TLSFiles.ServerConfig, for both): a route is
// both a client (the node that dials) and a server (the node dialled),
// so each end presents the node's certificate and verifies the other's,
// against the CAs clients are verified with (--tls-ca; the system's
// roots when none is given). A node whose certificate those CAs did not
// sign cannot join: the handshake fails at both ends, and each logs it
// ("TLS route handshake error"). Its certificate must name the address
// the other nodes dial (the route URL's host) and allow both server and
// client authentication.
func routeTLS(clients *tls.Config) *tls.Config {
	c := clients.Clone()
	c.ClientAuth = tls.RequireAndVerifyClientCert
	c.RootCAs = c.ClientCAs
	return c
}

// logger passes the server's log lines to a Logf. Debug and trace lines
// are off (SetLoggerV2's flags) and never reach it.
type logger func(format string, args ...any)

func (l logger) Noticef(f string, a ...any) { l("[INF] "+f, a...) }
func (l logger) Warnf(f string, a ...any)   { l("[WRN] "+f, a...) }
func (l logger) Fatalf(f string, a ...any)  { l("[FTL] "+f, a...) }
func (l logger) Errorf(f string, a ...any)  { l("[ERR] "+f, a...) }
func (l logger) Debugf(f string, a ...any)  {}
func (l logger) Tracef(f string, a ...any)  {}

// cluster sets a node's cluster options.
func cluster(opts *server.Options, c *Cluster) error {
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("embedded: cluster address %q: want HOST:PORT: %v", c.Addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("embedded: cluster address %q: bad port", c.Addr)
	}
	if p == 0 {
		p = server.RANDOM_PORT
	}
	name := c.Name
	if name == "" {
		name = "tqmon"
	}
	opts.Cluster = server.ClusterOpts{Name: name, Host: host, Port: p}
	for _, r := range c.Routes {
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			return fmt.Errorf("embedded: route %q: want nats-route://HOST:PORT", r)
		}
		opts.Routes = append(opts.Routes, u)
	}
	return nil
}

// RouteURL is where the other nodes of a cluster connect
// (nats-route://host:port); "" when the server is not a node of one.
func (s *Server) RouteURL() string {
	a := s.ns.ClusterAddr()
	if a == nil {
		return ""
	}
	return "nats-route://" + a.String()
}

// URL is the address clients connect to (nats://host:port, or
// tls://host:port when the server has TLS).
func (s *Server) URL() string { return s.ns.ClientURL() }

// Routes is how many other nodes of its cluster the node has routes to
// (a pair of nodes may keep several routes, a pool).
func (s *Server) Routes() int {
	rz, err := s.ns.Routez(nil)
	if err != nil {
		return 0
	}
	peers := map[string]bool{}
	for _, r := range rz.Routes {
		peers[r.RemoteID] = true
	}
	return len(peers)
}

// JetStream reports whether JetStream is enabled.
func (s *Server) JetStream() bool { return s.ns.JetStreamEnabled() }

// Shutdown stops the server and removes a temporary store.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	s.cleanup()
}

func (s *Server) cleanup() {
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
}

// StartCluster starts a cluster of n nodes in this process: StartNodes
// with no token, TLS or log.
func StartCluster(n int, dir func(i int) string) ([]*Server, error) {
	return StartNodes(Options{}, n, dir)
}

// StartNodes starts a cluster of n nodes in this process, each with
// base's Token, TLS (clients and routes), limits and Logf, named n1, n2,
// …: clients on loopback ports, routes on loopback (picked free first:
// JetStream in a cluster wants every node to know its routes from the
// start), node i's store in dir(i). It returns once every node has a
// route to each other and JetStream has a leader for the cluster's
// metadata (streams with replicas can be made), at most readyTimeout
// after the last node started; a port taken meanwhile is picked again, a
// few times.
func StartNodes(base Options, n int, dir func(i int) string) ([]*Server, error) {
	var err error
	for range 3 {
		var nodes []*Server
		if nodes, err = startCluster(base, n, dir); err == nil {
			return nodes, nil
		}
	}
	return nil, err
}

func startCluster(base Options, n int, dir func(i int) string) ([]*Server, error) {
	var routes []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("embedded: %w", err)
		}
		routes = append(routes, "nats-route://"+l.Addr().String())
		l.Close()
	}
	var nodes []*Server
	stop := func() {
		for _, s := range nodes {
			s.Shutdown()
		}
	}
	for i := range n {
		c := &Cluster{Name: "fleet", Addr: routes[i][len("nats-route://"):], Routes: routes}
		o := base
		o.Addr, o.Data, o.Name, o.Cluster = "127.0.0.1:0", dir(i), fmt.Sprintf("n%d", i+1), c
		s, err := Start(o)
		if err != nil {
			stop()
			return nil, err
		}
		nodes = append(nodes, s)
	}
	deadline := time.Now().Add(clusterTimeout)
	for {
		ready, leader := true, false
		for _, s := range nodes {
			ready = ready && s.Routes() == n-1
			leader = leader || s.ns.JetStreamIsLeader()
		}
		if ready && leader {
			return nodes, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("embedded: the cluster of %d nodes was not up (routes, a JetStream leader) in %v", n, clusterTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
