package session

// Enables counts one session's enables by key — a sensor and an entity
// for enables of one entity, a sensor for whole-type enables — so that
// the session's end undoes exactly what it set. A key has two counts: the
// session's own enables (CEnable, CEnableAll) and those its triggers made
// (a resident that evaluates triggers). The session holds the key while
// the sum is positive; the resident acts on the transitions Enable,
// Disable, Trigger and Untrigger report (the first hold, the last
// release). The zero value is empty and ready; the resident's lock guards
// it.
type Enables[K comparable] struct {
	own, trig map[K]int32
}

// Enable counts one own enable of k; first reports that the session did
// not hold k before.
func (e *Enables[K]) Enable(k K) (first bool) {
	if e.own == nil {
		e.own = map[K]int32{}
	}
	e.own[k]++
	return e.own[k]+e.trig[k] == 1
}

// Disable takes back one own enable of k: ok is false (and nothing
// changes) when the session has none; last reports that the session no
// longer holds k.
func (e *Enables[K]) Disable(k K) (last, ok bool) {
	n := e.own[k]
	if n == 0 {
		return false, false
	}
	if n == 1 {
		delete(e.own, k)
	} else {
		e.own[k] = n - 1
	}
	return n == 1 && e.trig[k] == 0, true
}

// Trigger counts one enable of k made by a trigger; first reports that
// the session did not hold k before.
func (e *Enables[K]) Trigger(k K) (first bool) {
	if e.trig == nil {
		e.trig = map[K]int32{}
	}
	e.trig[k]++
	return e.own[k]+e.trig[k] == 1
}

// Untrigger takes back one trigger enable of k (there must be one); last
// reports that the session no longer holds k.
func (e *Enables[K]) Untrigger(k K) (last bool) {
	n := e.trig[k] - 1
	if n <= 0 {
		delete(e.trig, k)
	} else {
		e.trig[k] = n
	}
	return n <= 0 && e.own[k] == 0
}

// Len returns how many keys the session holds (own or by triggers).
func (e *Enables[K]) Len() int {
	n := len(e.own)
	for k := range e.trig {
		if e.own[k] == 0 {
			n++
		}
	}
	return n
}

// Full reports whether enabling k would make the session hold more than
// MaxEnables keys: the resident then refuses the command.
func (e *Enables[K]) Full(k K) bool {
	return !e.Holds(k) && len(e.own)+len(e.trig) >= MaxEnables
}

// Holds reports whether the session holds k.
func (e *Enables[K]) Holds(k K) bool { return e.own[k]+e.trig[k] > 0 }

// Each calls f for every key the session holds, with its own count (0
// for a key only triggers hold).
func (e *Enables[K]) Each(f func(k K, own int32)) {
	for k, n := range e.own {
		f(k, n)
	}
	for k := range e.trig {
		if e.own[k] == 0 {
			f(k, 0)
		}
	}
}

// Reset forgets every enable (the session ended and the resident undid
// them).
func (e *Enables[K]) Reset() {
	clear(e.own)
	clear(e.trig)
}
