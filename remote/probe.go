package remote

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/rewrite"
)

// ProbeRate is what a probe saw of one α's sensor, in packets per second
// over every resident: All, with the sensor enabled for every entity (as
// before rewriting); Passed, those the α's fragment passes (what crosses
// the wire with the resident's selection; All when it has none).
type ProbeRate struct {
	All, Passed float64
}

// ProbeKey names an α for a probe's rates: its relation and the selection
// placed at the resident (α operators that agree on both see the same
// packets), so rates found on one rewrite of a program apply to another.
func ProbeKey(a *plan.Alpha, f *rewrite.Fragment) string {
	if f == nil || f.Pred == nil {
		return a.Rel.Name
	}
	return a.Rel.Name + " where " + f.Pred.String()
}

// Probe measures the cost --explain shows for a live subject: for d, it
// enables every sensor the plans' α operators read for every entity
// (sampled ones at the α's sampling period), installs no fragment, and
// counts per α the packets per second its sensor produced and those its
// fragment (rewrite.Place) passes. The conns' sessions are used only for
// this (then closed by the caller); ready, when set, is called once the
// commands are sent.
func Probe(ctx context.Context, conns []wire.Conn, cat *algebra.Catalog, plans []plan.Node, d time.Duration, ready func()) (map[string]ProbeRate, error) {
	if err := CheckHellos(conns, cat.Fleet); err != nil {
		return nil, err
	}
	frags := rewrite.Place(plans...)
	type probe struct {
		a *plan.Alpha
		f *rewrite.Fragment
	}
	byRel := map[string][]probe{}
	sampled := map[string]int64{}
	for _, p := range plans {
		plan.Walk(p, func(n plan.Node) {
			a, ok := n.(*plan.Alpha)
			if !ok {
				return
			}
			byRel[a.Rel.Name] = append(byRel[a.Rel.Name], probe{a, frags[a]})
			if a.Sampled() {
				if clk, ok := a.When.(*plan.ClockSrc); ok {
					per := clk.N * cat.ClockPeriod
					if old, ok := sampled[a.Rel.Name]; !ok || per < old {
						sampled[a.Rel.Name] = per
					}
				}
			}
		})
	}
	states := make([]*connState, len(conns))
	for i, c := range conns {
		h := c.Hello()
		st := &connState{conn: c, hello: h, idx: i, converter: newConverter(h, i, cat), ids: map[string]uint16{}}
		for id, name := range h.Sensors {
			st.ids[name] = uint16(id)
		}
		states[i] = st
		// A lease (a demo subject waiting for a monitor starts on one).
		lease := wire.Command{Kind: wire.CLease, Period: int64(d + 3*time.Second)}
		if err := c.Send(&lease); err != nil {
			return nil, fmt.Errorf("resident %s: %w", h.Name, err)
		}
		for rel := range byRel {
			id, ok := st.ids[rel]
			if !ok && cat.Fleet {
				continue // a relation of other hosts
			}
			if !ok {
				return nil, fmt.Errorf("resident %s has no sensor %s", h.Name, rel)
			}
			cmd := wire.Command{Kind: wire.CEnableAll, Sensor: id}
			if byRel[rel][0].a.Sampled() {
				per, ok := sampled[rel]
				if !ok {
					continue // no Clock[n] argument: live runs refuse it too
				}
				cmd = wire.Command{Kind: wire.CSample, ID: 1 + uint64(id), Sensor: id, All: true, Period: per}
			}
			if err := c.Send(&cmd); err != nil {
				return nil, fmt.Errorf("resident %s: %w", h.Name, err)
			}
		}
	}
	if ready != nil {
		ready()
	}
	all := map[string]int{}
	passed := map[string]int{}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches, _ := receive(ctx, conns, nil, 16)
	stop := time.After(d)
	t0 := time.Now()
	ended := 0
	for ended < len(conns) {
		var r received
		select {
		case <-stop:
			ended = len(conns)
			continue
		case <-ctx.Done():
			return nil, ctx.Err()
		case r = <-batches:
		}
		if r.err != nil {
			if r.err != io.EOF {
				return nil, r.err
			}
			ended++
			continue
		}
		st := states[r.i]
		st.define(r.b.Defs)
		for _, pk := range r.b.Packets {
			if int(pk.Sensor) >= len(st.hello.Sensors) || pk.Kind == wire.PEntityBegin || pk.Kind == wire.PEntityEnd {
				continue
			}
			name := st.hello.Sensors[pk.Sensor]
			ps := byRel[name]
			if len(ps) == 0 {
				continue
			}
			vals, err := st.values(ps[0].a.Rel, pk.Vals, nil)
			if err != nil {
				return nil, err
			}
			for _, p := range ps {
				k := ProbeKey(p.a, p.f)
				all[k]++
				if p.f == nil || p.f.Pred == nil {
					passed[k]++
					continue
				}
				b := make(expr.Binding, p.f.Var+1)
				b[p.f.Var] = vals
				if v, err := expr.Eval(p.f.Pred, b); err != nil || v.B() {
					passed[k]++
				}
			}
		}
	}
	secs := time.Since(t0).Seconds()
	out := map[string]ProbeRate{}
	for _, ps := range byRel {
		for _, p := range ps {
			k := ProbeKey(p.a, p.f)
			// Several α on one key count each packet once each: divide back.
			n := 0
			for _, q := range ps {
				if ProbeKey(q.a, q.f) == k {
					n++
				}
			}
			out[k] = ProbeRate{All: float64(all[k]) / float64(n) / secs, Passed: float64(passed[k]) / float64(n) / secs}
		}
	}
	return out, nil
}
