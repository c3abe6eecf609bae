package exec

import "testing"

// TestDepsDropDead: an entry open for long keeps, in its deps list, the
// candidates still live and not those finished since (their partners
// ended): its list stays as long as the live ones need, however many it
// has met.
func TestDepsDropDead(t *testing.T) {
	j := &Join{}
	e := &entry{open: true}
	var live []*cand
	for i := range 100_000 {
		c := &cand{}
		j.addDep(e, c)
		if i%1000 == 0 {
			live = append(live, c) // stays live
		} else {
			c.state = dead
		}
	}
	if n := len(e.deps); n > 2*len(live)+32 {
		t.Errorf("deps list of %d candidates for %d live", n, len(live))
	}
	kept := map[*cand]bool{}
	for _, c := range e.deps {
		kept[c] = true
	}
	for _, c := range live {
		if !kept[c] {
			t.Fatal("a live candidate was dropped")
		}
	}
}
