package exec

import (
	"slices"

	"github.com/tqmon/tqmon/algebra"
)

// An α's records carry only the attributes it keeps (Alpha.Keep), the
// others zero (packetVals). A driver that converts only those attributes
// (remote: what Network.Kept says) hands over values already in that
// form; α then takes them as they are rather than copying them, which
// is exact: the copy would hold the same values. zeroOutside is the test
// — the attributes not kept (dropped) all zero — made per packet; the
// records are the same either way (TestKeptValuesShared).

// dropped is the complement of keep among n attributes (nil when keep is
// nil: everything is kept).
func dropped(keep []int, n int) []int {
	if keep == nil {
		return nil
	}
	var out []int
	for i := range n {
		if !slices.Contains(keep, i) {
			out = append(out, i)
		}
	}
	return out
}

// zeroOutside reports whether vals are zero at every attribute in drop.
func zeroOutside(vals []algebra.Value, drop []int) bool {
	for _, i := range drop {
		if i >= len(vals) || vals[i] != (algebra.Value{}) {
			return false
		}
	}
	return true
}

// Kept returns, for each sensed relation the network reads, the
// attributes its αs keep, in increasing order (all of its αs' Keep
// together; a relation one of whose αs keeps everything is absent). A
// driver need convert only those: α zeroes the others anyway.
func (n *Network) Kept() map[string][]int {
	out := map[string][]int{}
	all := map[string]bool{}
	for _, a := range n.Alphas {
		name := a.Rel.Name
		if a.Keep == nil || all[name] {
			all[name] = true
			delete(out, name)
			continue
		}
		for _, i := range a.Keep {
			if !slices.Contains(out[name], i) {
				out[name] = append(out[name], i)
			}
		}
	}
	for _, k := range out {
		slices.Sort(k)
	}
	return out
}
