package subject

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/fleet"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/rewrite"
	"github.com/tqmon/tqmon/store/db"
)

// Residents name the resident monitors a live subject reaches: by
// address over gRPC (Connect), and as the hosts on a NATS server (NATS,
// the hosts the glob Hosts matches; "" all). Token is presented to both.
type Residents struct {
	// Security secures every connection (transport.Dial, fleet.Connect):
	// TLS when set, and a token is sent in clear only to loopback
	// addresses unless Insecure.
	Security transport.Security

	Connect []string
	NATS    string
	Hosts   string
	Token   string
	// Skew, when positive, is the clock-skew bound stated for every host
	// on NATS instead of the one measured (fleet.DialOptions.Skew);
	// Silence, when positive, is how long a host may send nothing —
	// neither a frame nor a heartbeat — before its session is lost and
	// its relations are unobserved from then (default fleet.Silence).
	Skew, Silence time.Duration
	// Resume, when set, opens the hosts' sessions durable, their frames
	// kept in a JetStream stream, or resumes those a monitor of that
	// name (killed) had open (fleet.Resume).
	Resume *fleet.Resume
}

// Given reports whether r names any resident.
func (r Residents) Given() bool { return len(r.Connect) > 0 || r.NATS != "" }

// String says where the residents are.
func (r Residents) String() string {
	var w []string
	if len(r.Connect) > 0 {
		w = append(w, strings.Join(r.Connect, ", "))
	}
	if r.NATS != "" {
		w = append(w, fmt.Sprintf("hosts %s on %s", cmp.Or(r.Hosts, "*"), r.NATS))
	}
	return strings.Join(w, " and ")
}

// Dial connects to the residents r names, checks their hellos (one
// protocol) and compiles the descriptions they announce into a catalog
// (remote.FleetCatalog), whose text it returns: their sessions go into
// remote's one merge. Residents are a fleet — each tuple carries its
// Host, entity identifiers are host-qualified, descriptions may differ
// — when they are hosts on NATS (host names are what a fleet is keyed
// by); residents reached over gRPC alone are one subject, as before:
// one description, identifiers not qualified. On error no connection stays open.
func Dial(ctx context.Context, r Residents) ([]wire.Conn, *algebra.Catalog, string, error) {
	var conns []wire.Conn
	fail := func(err error) ([]wire.Conn, *algebra.Catalog, string, error) {
		for _, c := range conns {
			c.Close()
		}
		return nil, nil, "", err
	}
	for _, addr := range r.Connect {
		c, err := transport.Dial(ctx, addr, r.Token, r.Security)
		if err != nil {
			return fail(fmt.Errorf("connect %s: %w", addr, err))
		}
		conns = append(conns, c)
	}
	if r.NATS != "" {
		if r.Silence > 0 && r.Silence < 2*fleet.Beat {
			// Residents beat every fleet.Beat: a shorter silence would
			// lose hosts that are only between two beats.
			return fail(badInput(fmt.Errorf("--silence %s is under two heartbeats (%s each): healthy hosts would be lost", r.Silence, fleet.Beat)))
		}
		cs, err := fleet.DialHosts(ctx, r.NATS, r.Token, r.Hosts, fleet.DialOptions{Skew: r.Skew, Silence: r.Silence, Security: r.Security, Resume: r.Resume})
		if err != nil {
			return fail(err)
		}
		conns = append(conns, cs...)
	}
	fleet := r.NATS != ""
	if err := remote.CheckHellos(conns, fleet); err != nil {
		return fail(err)
	}
	hellos := make([]*wire.Hello, len(conns))
	for i, c := range conns {
		hellos[i] = c.Hello()
	}
	cat, text, err := remote.FleetCatalog(hellos, fleet)
	if err != nil {
		return fail(err)
	}
	return conns, cat, text, nil
}

// live is what the live subjects share: their residents' description,
// runs over sessions, and the statistics of the last run.
type live struct {
	desc  string
	cat   *algebra.Catalog
	hello *wire.Hello
	// sdl is the catalog's description when it is not the hello's (a
	// fleet's: remote.FleetCatalog).
	sdl    string
	params map[string]string
	open   func(ctx context.Context, d time.Duration, mon func(Session) error) (*algebra.Window, error)
	// selects: a kernel resident's Selects (what its programs evaluate of
	// a selection), nil for other residents.
	selects func(rel string, p *wire.Pred) ([]string, bool)

	mu   sync.Mutex
	last *remote.LiveStats
}

func (s *live) Describe() string                           { return s.desc }
func (s *live) Catalog() *algebra.Catalog                  { return s.cat }
func (s *live) Now() algebra.Time                          { return 0 }
func (s *live) Extent() (algebra.Time, algebra.Time, bool) { return 0, 0, false }
func (s *live) Window() *algebra.Window                    { return nil }
func (s *live) Params() map[string]string                  { return s.params }
func (s *live) Live() bool                                 { return true }
func (s *live) database() *db.DB                           { return nil }
func (s *live) Spec() (db.Spec, error) {
	if s.sdl != "" {
		return db.Spec{Name: "fleet.sdl", Text: s.sdl}, nil
	}
	return db.Spec{Name: s.hello.Name + ".sdl", Text: s.hello.SDL}, nil
}

func (s *live) session(ctx context.Context, d time.Duration, mon func(Session) error) (*algebra.Window, error) {
	return s.open(ctx, d, mon)
}

func (s *live) recorded() (playable, error) {
	return playable{}, fmt.Errorf("%s is live, not a recording", s.desc)
}

func (s *live) Explain(w io.Writer, prog *query.Program, first int, naive bool) error {
	rates, how, placed, perr := s.probe(prog, naive)
	return explain(w, prog, first, naive, func(r rewrite.Result) string {
		return rewrite.Explain(r, nil) + sampling(r.Final, s.cat) + enabling(r.Final, how) + s.inKernel(r.Final) + probed(r.Final, rates, perr) +
			"where it runs: " + placed.String() + "\n" + placementRates(placed, r.Final, rates) + rewrite.PlacedTree(placed, r.Final)
	})
}

// placementRates puts the probe's rates on the rule "placement cost"'s
// estimate (rewrite.ProgramPlacement.PerPacket): for each α of a plan the
// rule weighed, the packets per second across the wire it would replace,
// and the results per second placing would send instead, or spare.
func placementRates(placed rewrite.ProgramPlacement, p plan.Node, rates map[string]remote.ProbeRate) string {
	if placed.PerPacket == nil || rates == nil {
		return ""
	}
	var b strings.Builder
	frags := rewrite.Place(p)
	seen := map[string]bool{}
	for _, a := range rewrite.Alphas(p) {
		key := remote.ProbeKey(a, frags[a])
		r, ok := rates[key]
		if !ok || seen[key] {
			continue
		}
		seen[key] = true
		rate := r.All
		if f := frags[a]; f != nil && f.Pred != nil {
			rate = r.Passed
		}
		if k := placed.PerPacket[a.Rel.Name]; k > 0 {
			fmt.Fprintf(&b, "placement cost of α %s (live): %.0f packets/s across the wire at the monitor; placed, at least %.0f results/s (%d statement(s) with a result per packet)\n", a.VarName, rate, float64(k)*rate, k)
		} else {
			fmt.Fprintf(&b, "placement cost of α %s (live): %.0f packets/s across the wire at the monitor, spared by placing\n", a.VarName, rate)
		}
	}
	return b.String()
}

// inKernel says, for a kernel resident, which part of each α's selection
// at the resident its eBPF programs evaluate (before a packet is made).
func (s *live) inKernel(p plan.Node) string {
	if s.selects == nil {
		return ""
	}
	var b strings.Builder
	frags := rewrite.Place(p)
	for _, a := range rewrite.Alphas(p) {
		// The entity selection (entity triggers): the kernel enables the
		// sensor by the process's Command, at its fork and exec.
		if sel, ok := remote.EntitySelection(a.Enable); ok && sel != nil && s.hello.Has(wire.CapEntityTriggers) &&
			a.Rel.Attrs[a.Rel.FlagHolder].Type.Entity == "Process" {
			fmt.Fprintf(&b, "in the kernel (α %s on %s): enabled for a process from its fork or exec while %s (the Command equality in the kernel, the rest at the monitor)\n",
				a.VarName, a.Rel.Name, sel.Pred.String())
		}
		f := frags[a]
		if f == nil || f.Pred == nil {
			continue
		}
		wp, ok := remote.WirePred(f.Pred)
		if !ok {
			continue
		}
		placed, ok := s.selects(a.Rel.Name, wp)
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "in the kernel (α %s on %s, in its eBPF programs, before the ring buffer):", a.VarName, a.Rel.Name)
		same := !slices.ContainsFunc(placed, func(x string) bool { return x != placed[0] })
		for i, x := range placed {
			if x == "" {
				x = "nothing (the monitor selects)"
			}
			if same {
				fmt.Fprintf(&b, " %s\n", x)
				break
			}
			fmt.Fprintf(&b, "\n  binding %d: %s", i, x)
		}
		if !same {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// probeFor is how long --explain watches a live subject's sensors
// (remote.Probe).
const probeFor = 300 * time.Millisecond

// probe measures, for --explain, each α's sensor's packets per second
// (remote.Probe) over a session of its own, and says how the residents
// would enable each α (remote.Enabling).
func (s *live) probe(prog *query.Program, naive bool) (map[string]remote.ProbeRate, map[string]string, rewrite.ProgramPlacement, error) {
	var placed rewrite.ProgramPlacement
	rw, err := prog.Rewritten(naive)
	if err != nil {
		return nil, nil, placed, err
	}
	var plans []plan.Node
	for _, r := range rw {
		plans = append(plans, r.Final)
	}
	var rates map[string]remote.ProbeRate
	var how map[string]string
	_, err = s.open(context.Background(), probeFor, func(ss Session) error {
		var hellos []*wire.Hello
		for _, c := range ss.Conns {
			hellos = append(hellos, c.Hello())
		}
		how = remote.Enabling(prog, plans, hellos)
		placed = remote.Placement(prog, plans, hellos, naive)
		var err error
		rates, err = remote.Probe(ss.Ctx, ss.Conns, s.cat, plans, probeFor, ss.Ready)
		for _, c := range ss.Conns {
			c.Close()
		}
		return err
	})
	return rates, how, placed, err
}

// enabling says how the residents enable each α of a plan, live.
func enabling(p plan.Node, how map[string]string) string {
	var b strings.Builder
	for _, a := range rewrite.Alphas(p) {
		if d, ok := how[remote.EnablingKey(a)]; ok {
			fmt.Fprintf(&b, "live enabling of α %s at the residents: %s\n", a.VarName, d)
		}
	}
	return b.String()
}

// probed says what the probe saw of each α of a plan.
func probed(p plan.Node, rates map[string]remote.ProbeRate, err error) string {
	var b strings.Builder
	if err != nil {
		fmt.Fprintf(&b, "live cost: no probe (%v)\n", err)
		return b.String()
	}
	frags := rewrite.Place(p)
	for _, a := range rewrite.Alphas(p) {
		r, ok := rates[remote.ProbeKey(a, frags[a])]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "live cost of α %s (a %s probe, every entity enabled): %.0f packets/s", a.VarName, probeFor, r.All)
		if f := frags[a]; f != nil && f.Pred != nil {
			fmt.Fprintf(&b, ", %.0f/s across the wire with the resident's selection", r.Passed)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// sampling says what a live run sees of each sampled relation the plan
// reads: its state at the sampling instants only.
func sampling(p plan.Node, cat *algebra.Catalog) string {
	var b strings.Builder
	plan.Walk(p, func(n plan.Node) {
		a, ok := n.(*plan.Alpha)
		if !ok || a.Rel.Strategy.Kind != algebra.Sampled {
			return
		}
		if clk, ok := a.When.(*plan.ClockSrc); ok {
			fmt.Fprintf(&b, "observation: %s (α %s) is sampled every %s: live, a tuple is seen only at the sampling instants it covers (one that begins and ends between two is not seen)\n",
				a.Rel.Name, a.VarName, time.Duration(clk.N*cat.ClockPeriod))
		}
	})
	return b.String()
}

// Run runs the program live against a session of the residents.
func (s *live) Run(ctx context.Context, prog *query.Program, o RunOptions) ([]query.Result, Stats, error) {
	var rs []query.Result
	var st remote.LiveStats
	_, err := s.open(ctx, o.Duration, func(ss Session) error {
		var err error
		rs, st, err = remote.RunLive(ss.Ctx, prog, ss.Conns, remote.LiveOptions{Duration: ss.Duration, Naive: o.Naive, WireBytes: o.WireBytes, Follow: ss.Follow,
			Lease: o.Lease, OnElem: o.OnElem, Ready: chain(ss.Ready, o.Ready), Progress: o.Progress, Discard: o.Discard,
			OnLoss: o.OnLoss, TimeFormat: o.TimeFormat})
		if err == nil {
			err = st.Err()
		}
		return err
	})
	s.mu.Lock()
	s.last = &st
	s.mu.Unlock()
	return rs, Stats{Live: &st}, err
}

// chain calls each function set.
func chain(fs ...func()) func() {
	return func() {
		for _, f := range fs {
			if f != nil {
				f()
			}
		}
	}
}

// Sensors reports the sensors: what the last run enabled, received and
// lost.
func (s *live) Sensors() string {
	var b strings.Builder
	fmt.Fprintf(&b, "resident %s: %d sensors\n", s.hello.Name, len(s.hello.Sensors))
	s.mu.Lock()
	st := s.last
	s.mu.Unlock()
	if st == nil {
		b.WriteString("no query has run yet: nothing is enabled\n")
		return b.String()
	}
	b.WriteString("last query (nothing stays enabled between queries):\n")
	names := append([]string(nil), s.hello.Sensors...)
	sort.Strings(names)
	periods := map[string]time.Duration{}
	for _, o := range st.Observed {
		periods[o.Rel] = o.Period
	}
	for _, n := range names {
		p, w, d := st.Packets[n], st.Wanted[n], st.Dropped[n]
		if p == 0 && w == 0 && d == 0 {
			fmt.Fprintf(&b, "  %-14s not enabled\n", n)
			continue
		}
		fmt.Fprintf(&b, "  %-14s %d packets received, %d produced while enabled, %d dropped\n", n, p, w, d)
		for _, why := range explainCounts(p, w, d, periods[n]) {
			fmt.Fprintf(&b, "  %-14s   %s\n", "", why)
		}
	}
	for _, v := range st.Widened {
		fmt.Fprintf(&b, "  note: α %s was widened (its sensor enabled for every entity)\n", v)
	}
	b.WriteString("  (produced counts what the resident's sensors produced while this query ran, for any\n" +
		"  session; packets a selection placed at the resident filtered out count neither way)\n")
	fmt.Fprintf(&b, "  peak held: %d tuples\n", st.PeakHeld)
	return b.String()
}

// explainCounts says why a sensor's packets received p differ from those
// produced while enabled w, d of them dropped (period: a sampled
// relation's): lost ones, sampling, and those produced for other
// sessions (the counts are the resident's while the query ran, not the
// query's alone).
func explainCounts(p int, w, d uint64, period time.Duration) []string {
	var why []string
	if period > 0 {
		why = append(why, fmt.Sprintf("sampled every %s: a packet per tick for each tuple valid then", period))
	}
	if d > 0 {
		why = append(why, fmt.Sprintf("%d dropped: lost to a full ring or a full session (shed); the answers are cut at those gaps", d))
	}
	got := uint64(p) + d
	switch {
	case got >= w:
	case p == 0 && d == 0:
		why = append(why, fmt.Sprintf("none for this query: the %d were produced for other sessions (another monitor's, or one still closing) or for entities it did not enable", w))
	default:
		why = append(why, fmt.Sprintf("%d not for this query: produced while it ran for other sessions (another monitor's, or one still closing) or for entities it did not enable", w-got))
	}
	return why
}

// openResidents reaches resident monitors: the first session uses the
// connections Open made, later ones dial again.
func openResidents(ctx context.Context, r Residents) (Subject, error) {
	conns, cat, text, err := Dial(ctx, r)
	if err != nil {
		return nil, err
	}
	hello := conns[0].Hello()
	s := &residents{conns: conns}
	desc := fmt.Sprintf("resident %s at %s", hello.Name, r)
	if cat.Fleet {
		desc = fmt.Sprintf("a fleet of %d hosts (%s)", len(conns), r)
	} else {
		text = ""
	}
	s.live = live{desc: desc, cat: cat, hello: hello, sdl: text,
		open: func(ctx context.Context, d time.Duration, mon func(Session) error) (*algebra.Window, error) {
			conns := s.take()
			if conns == nil {
				var err error
				if conns, _, _, err = Dial(ctx, r); err != nil {
					return nil, err
				}
			}
			return nil, mon(Session{Conns: conns, Ctx: ctx, Duration: d})
		}}
	return s, nil
}

// residents are resident monitors reached over the transport.
type residents struct {
	live
	cmu   sync.Mutex
	conns []wire.Conn // dialled by Open, not yet used
}

// take returns the connections Open made, once.
func (s *residents) take() []wire.Conn {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	conns := s.conns
	s.conns = nil
	return conns
}

func (s *residents) Close() error {
	for _, c := range s.take() {
		c.Close()
	}
	return nil
}
