package remote

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor"
)

// FleetCatalog compiles the descriptions residents announce into the one
// catalog a monitor queries, and returns its description's text (what a
// recording of the run stores).
//
// One resident (fleet false) is the subject itself: its description is
// the catalog, unchanged. A fleet — several residents, or hosts reached
// over NATS — is one subject of many hosts, and its catalog says so
// (algebra.Catalog.Fleet):
//
//   - The catalog is the union of the hosts' descriptions: entity types
//     and relations of every host. A relation two hosts declare must be
//     declared alike (same class, attributes, strategy), and the clock
//     must agree: what a query reads means one thing on every host.
//     Sensor bindings (where a sensor lives on a host) stay the host's.
//   - Every relation gets a last attribute, Host: string. Last, so that
//     the attribute numbers residents know (a trigger's, a fragment's)
//     are the catalog's too; a description that declares Host itself is
//     refused.
//   - A relation only some hosts declare is watched on those hosts
//     only: the others are not asked to enable it, and the run's
//     observation says on which hosts it was watched (Observation.Hosts)
//     — the others' part is unobserved, not empty.
//
// Host names must differ: they are what tells two hosts' P1 apart.
func FleetCatalog(hellos []*wire.Hello, fleet bool) (*algebra.Catalog, string, error) {
	if len(hellos) == 0 {
		return nil, "", fmt.Errorf("no resident to connect to")
	}
	if !fleet {
		h := hellos[0]
		cat, err := compileSDL(h.Name, h.SDL)
		return cat, h.SDL, err
	}
	var types []string
	var rels []*sdl.RelationDecl
	relText := map[string]string{}
	relFrom := map[string]string{}
	clock, clockFrom, period := "", "", int64(0)
	hosts := map[string]bool{}
	for _, h := range hellos {
		if hosts[h.Name] {
			return nil, "", fmt.Errorf("two residents are host %s: a fleet's hosts need names of their own", h.Name)
		}
		hosts[h.Name] = true
		f, err := sdl.Parse(h.Name+".sdl", h.SDL)
		if err != nil {
			return nil, "", fmt.Errorf("host %s announces a description that does not parse: %w", h.Name, err)
		}
		for _, s := range f.Stmts {
			switch d := s.(type) {
			case *sdl.EntityTypeDecl:
				for _, n := range d.Names {
					if !slices.Contains(types, n.Name) {
						types = append(types, n.Name)
					}
				}
			case *sdl.ClockDecl:
				if clock != "" && d.Period != period {
					return nil, "", fmt.Errorf("hosts %s and %s declare different clocks (%s, %s)", clockFrom, h.Name, clock, d.Text)
				}
				clock, clockFrom, period = d.Text, h.Name, d.Period
			case *sdl.RelationDecl:
				for _, a := range d.Attrs {
					if a.Name.Name == algebra.HostAttr {
						return nil, "", fmt.Errorf("host %s: %s:%s: relation %s declares an attribute %s, which a fleet adds to every relation (the host a tuple came from)",
							h.Name, f.Name, a.Name.At, d.Name.Name, algebra.HostAttr)
					}
				}
				text := sdl.FormatStmt(d)
				if prev, ok := relText[d.Name.Name]; ok {
					if prev != text {
						return nil, "", fmt.Errorf("hosts %s and %s declare relation %s differently:\n  %s\n  %s", relFrom[d.Name.Name], h.Name, d.Name.Name, prev, text)
					}
					continue
				}
				relText[d.Name.Name], relFrom[d.Name.Name] = text, h.Name
				rels = append(rels, d)
			}
		}
	}
	var b strings.Builder
	// The marker says it is a fleet's (algebra.FleetMarker): a recording
	// storing this text reads back as a fleet's catalog.
	b.WriteString(algebra.FleetMarker + " a fleet's description: the union of its hosts', each relation with the host it came from\n")
	if clock != "" {
		fmt.Fprintf(&b, "clock %s\n", clock)
	}
	if len(types) > 0 {
		fmt.Fprintf(&b, "entity type %s\n", strings.Join(types, ", "))
	}
	for _, d := range rels {
		x := *d
		x.Attrs = append(slices.Clip(d.Attrs), &sdl.Attr{Name: &sdl.Ident{Name: algebra.HostAttr}, Type: &sdl.TypeRef{Name: "string"}})
		b.WriteString(sdl.FormatStmt(&x))
		b.WriteByte('\n')
	}
	text := b.String()
	cat, err := compileSDL("fleet", text)
	if err != nil {
		return nil, "", err
	}
	cat.MarkFleet()
	return cat, text, nil
}

func compileSDL(name, text string) (*algebra.Catalog, error) {
	f, err := sdl.Parse(name+".sdl", text)
	if err != nil {
		return nil, fmt.Errorf("resident %s announces a description that does not parse: %w", name, err)
	}
	cat, err := sensor.Compile(f)
	if err != nil {
		return nil, fmt.Errorf("resident %s announces an invalid description: %w", name, err)
	}
	return cat, nil
}

// hostHas reports whether a resident declares relation rel (a fleet's
// relation may be some hosts' only).
func (st *connState) hostHas(rel string) bool {
	_, ok := st.ids[rel]
	return ok
}

// loseAt notes that st's session was lost with its watermark at since:
// what it queued after since is dropped (not observed: more of it may
// have been lost with the session), and a mark queued one past since
// ends its tuples still valid there (observer.cutHost), in time order
// with the other residents' inputs, which go on.
func (st *connState) loseAt(since algebra.Time) {
	st.lostAt, st.lostSet = since, true
	q := st.queue[:0]
	for _, it := range st.queue {
		if it.T <= since {
			q = append(q, it)
		}
	}
	clear(st.queue[len(q):])
	st.queue = append(q, Input{T: algebra.Next(since), lost: st.idx + 1})
}

// onHosts says, of each relation observed in a fleet, on which hosts it
// was watched and how long (Observation.Hosts), and which hosts do not
// declare it (Observation.Undeclared).
func onHosts(obs []Observation, states []*connState, end algebra.Time) {
	for i := range obs {
		o := &obs[i]
		if algebra.IsObservation(o.Rel) {
			continue
		}
		for _, st := range states {
			if !st.hostHas(o.Rel) {
				o.Undeclared = append(o.Undeclared, st.hello.Name)
				continue
			}
			hs := HostSpan{Host: st.hello.Name, From: max(o.From, st.from), To: end}
			if st.lostSet {
				hs.To, hs.Lost = min(end, algebra.Next(st.lostAt)), true
			}
			o.Hosts = append(o.Hosts, hs)
		}
	}
}

// LateHosts is a connection that knows of hosts found after it was
// opened (fleet.DialHosts's, with a host glob): hosts the monitor was
// asked to watch but did not, because they were not found when the run
// began — joined later, or (in a NATS cluster) their answer had not yet
// reached the monitor's node.
type LateHosts interface {
	LateHosts() []string
}

// LateHostsError is a fleet run that did not watch hosts it was asked to
// (LiveStats.Late): the answer holds none of their tuples. It is
// ErrIncomplete.
type LateHostsError struct {
	Hosts []string
}

func (e *LateHostsError) Error() string {
	return fmt.Sprintf("host %s matched the hosts asked for but was found only after the run began: not observed (%v)", strings.Join(e.Hosts, ", "), ErrIncomplete)
}

func (e *LateHostsError) Unwrap() error { return ErrIncomplete }

// lateHosts are the hosts the connections found late, less the hosts
// the run watches (conns'), sorted. Every fleet run reads them at its end
// — the monitor's (RunLive) and one placed per host (perHostRun) — so
// that no answer leaves out a host the glob matched in silence.
func lateHosts(conns []wire.Conn) []string {
	var late []string
	for _, c := range conns {
		if l, ok := c.(LateHosts); ok {
			late = append(late, l.LateHosts()...)
		}
	}
	slices.Sort(late)
	late = slices.Compact(late)
	return slices.DeleteFunc(late, func(h string) bool {
		return slices.ContainsFunc(conns, func(c wire.Conn) bool { return c.Hello().Name == h })
	})
}
