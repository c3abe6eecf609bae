package stream

// Merge is one time-ordered Source of several (each time-ordered, their
// relations distinct): at each step the least next element (Compare; at
// equal keys, the earlier source's first).
func Merge(srcs ...Source) Source {
	if len(srcs) == 1 {
		return srcs[0]
	}
	return &merged{srcs: srcs, heads: make([]mergeHead, len(srcs))}
}

type mergeHead struct {
	rel   string
	e     Elem
	ok    bool
	taken bool // e was returned: read the next
}

type merged struct {
	srcs    []Source
	heads   []mergeHead
	started bool
}

func (m *merged) Next() (string, Elem, bool, error) {
	for i := range m.heads {
		h := &m.heads[i]
		if !m.started || h.taken {
			var err error
			h.rel, h.e, h.ok, err = m.srcs[i].Next()
			h.taken = false
			if err != nil {
				return "", Elem{}, false, err
			}
		}
	}
	m.started = true
	best := -1
	for i, h := range m.heads {
		if h.ok && (best < 0 || Compare(h.e, m.heads[best].e) < 0) {
			best = i
		}
	}
	if best < 0 {
		return "", Elem{}, false, nil
	}
	h := &m.heads[best]
	h.taken = true
	return h.rel, h.e, true, nil
}
