package kernel

// Following descendants (Options.Follow) on the resident's side. The
// kernel's follow map decides which packets are made (bpfgen's
// follow.go); the drain must then route a descendant's packets to the
// sessions that enabled its root. It keeps each process's root in the
// entity table, by the same rules as the kernel's map: an enabled
// process without a root becomes its own; a process forked by one with
// a root gets that root. The drain applies entity records and packets in
// time order, so a fork's record is applied before the child's packets;
// a fork the kernel saw before the enable (its record applied after)
// gives its child a root here that the kernel did not: routing is then
// more permissive than the kernel, which made no packet for it anyway.

// followRoot makes enabled process id a root unless it has one (r.mu).
func (e *entities) followRoot(id uint32) {
	if x := e.live[typeProcess][id]; x != nil && x.root == 0 {
		e.changed()
		x.root = id
	}
}

// inherit gives a process forked by parent (a pid) its parent's root.
func (e *entities) inherit(x *entity, parent uint32) {
	if !e.r.opts.Follow {
		return
	}
	if p := e.live[typeProcess][parent]; p != nil {
		x.root = p.root
	}
}

// routeRoot routes a packet no session enabled for its flag holder
// (num, a Process of a Process-flagged sensor) to the sessions that
// enabled the holder's root.
func (t *tracker) routeRoot(ss *sensorState, num uint32) uint64 {
	if !t.r.opts.Follow || ss.s.FlagType != "Process" {
		return 0
	}
	x := t.ents.live[typeProcess][num]
	if x == nil {
		x = t.ents.grave[typeProcess][num]
	}
	if x == nil || x.root == 0 || x.root == num {
		return 0
	}
	return t.route(ss.s.ID, x.root)
}
