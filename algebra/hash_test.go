package algebra

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestHashTupleAgreesWithKeys: over 20,000 random tuples drawn from small
// domains (so that equal keys are common), tuples with equal keys
// (AppendTupleKey) have equal hashes, and KeysEqual says exactly whether
// keys are equal. Floats include -0/+0 and NaNs of different bits, enums
// the same name at different ordinals (equal keys), strings with shared
// prefixes longer than a word.
func TestHashTupleAgreesWithKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	nan2 := math.Float64frombits(math.Float64bits(math.NaN()) ^ 1)
	floats := []float64{0, math.Copysign(0, -1), 1.5, -2, math.NaN(), nan2, math.Inf(1)}
	strs := []string{"", "a", "P1", "P10", "abcdefgh", "abcdefghi", "abcdefghij", "abcdefgh\x00"}
	value := func() Value {
		switch r.IntN(7) {
		case 0:
			return Entity(strs[r.IntN(len(strs))])
		case 1:
			return Str(strs[r.IntN(len(strs))])
		case 2:
			return Enum(strs[r.IntN(3)], r.IntN(2))
		case 3:
			return Float(floats[r.IntN(len(floats))])
		case 4:
			return Int(int64(r.IntN(4)) - 1)
		case 5:
			return Bool(r.IntN(2) == 0)
		}
		return TimeVal(Time(r.IntN(3)))
	}
	const n = 20000
	tuples := make([][]Value, n)
	for i := range tuples {
		tuples[i] = make([]Value, r.IntN(3))
		for j := range tuples[i] {
			tuples[i][j] = value()
		}
	}
	byKey := map[string]uint64{}
	byHash := map[uint64]string{}
	equalPairs := 0
	for i, tup := range tuples {
		key := string(AppendTupleKey(nil, tup))
		h := HashTuple(tup)
		if prev, ok := byKey[key]; ok {
			equalPairs++
			if prev != h {
				t.Fatalf("tuple %d %v: equal keys, hashes %x and %x", i, tup, prev, h)
			}
		}
		byKey[key] = h
		if k, ok := byHash[h]; ok && k != key {
			t.Logf("collision (allowed, told apart by KeysEqual): %q %q", k, key)
		}
		byHash[h] = key
		// KeysEqual against a few others, one of them often equal.
		for _, o := range [][]Value{tuples[r.IntN(n)], tuples[i/2], tup} {
			want := string(AppendTupleKey(nil, o)) == key
			if got := KeysEqual(tup, o); got != want {
				t.Fatalf("KeysEqual(%v, %v) = %v, keys equal: %v", tup, o, got, want)
			}
		}
	}
	if equalPairs < n/2 || len(byKey) < 1000 {
		t.Fatalf("%d tuples with an earlier equal key, %d distinct keys: the domains do not test both ways", equalPairs, len(byKey))
	}
	if len(byHash) != len(byKey) {
		t.Errorf("%d distinct keys but %d distinct hashes", len(byKey), len(byHash))
	}
}
