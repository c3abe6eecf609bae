package algebra

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
)

// Kind is the kind of a value; it mirrors the attribute types of docs/sdl.md.
type Kind uint8

const (
	KindInvalid  Kind = iota
	KindEntity        // an entity identifier (S), shown as a string
	KindEnum          // an enumeration member: S is its name, N its ordinal
	KindInt           // N
	KindFloat         // N holds the IEEE-754 bits
	KindString        // S
	KindBool          // N is 0 or 1
	KindTime          // N, nanoseconds since the epoch
	KindDuration      // N, nanoseconds
)

var kindNames = [...]string{
	KindInvalid: "invalid", KindEntity: "entity", KindEnum: "enum", KindInt: "int",
	KindFloat: "float", KindString: "string", KindBool: "bool", KindTime: "time",
	KindDuration: "duration",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "?"
}

// IsNumeric reports whether k is int or float.
func (k Kind) IsNumeric() bool { return k == KindInt || k == KindFloat }

// Value is one attribute value. It is a small comparable struct so tuples are
// plain slices of values.
type Value struct {
	K Kind
	N int64
	S string
}

func Int(n int64) Value               { return Value{K: KindInt, N: n} }
func Float(f float64) Value           { return Value{K: KindFloat, N: int64(math.Float64bits(f))} }
func Str(s string) Value              { return Value{K: KindString, S: s} }
func Entity(id string) Value          { return Value{K: KindEntity, S: id} }
func Enum(name string, ord int) Value { return Value{K: KindEnum, S: name, N: int64(ord)} }
func TimeVal(t Time) Value            { return Value{K: KindTime, N: t} }
func DurationVal(d int64) Value       { return Value{K: KindDuration, N: d} }
func Bool(b bool) Value {
	if b {
		return Value{K: KindBool, N: 1}
	}
	return Value{K: KindBool}
}

// F returns a float value's number (or an int value converted).
func (v Value) F() float64 {
	if v.K == KindInt {
		return float64(v.N)
	}
	return math.Float64frombits(uint64(v.N))
}

// B returns a bool value's truth.
func (v Value) B() bool { return v.N != 0 }

// Compare orders two values of compatible kinds: numbers numerically (int and
// float mix), enums by declaration order, entity identifiers in natural order
// ("P2" before "P10"), strings lexicographically, false before true, times
// and durations by their nanoseconds. Values of incompatible kinds order by
// kind, so Compare is a total order usable for sorting.
func Compare(a, b Value) int {
	if a.K != b.K {
		if a.K.IsNumeric() && b.K.IsNumeric() {
			return cmpFloat(a.F(), b.F())
		}
		return cmpInt(int64(a.K), int64(b.K))
	}
	switch a.K {
	case KindFloat:
		return cmpFloat(a.F(), b.F())
	case KindString:
		return strings.Compare(a.S, b.S)
	case KindEntity:
		return NaturalCompare(a.S, b.S)
	case KindEnum:
		if a.N != b.N {
			return cmpInt(a.N, b.N)
		}
		return strings.Compare(a.S, b.S)
	default:
		return cmpInt(a.N, b.N)
	}
}

// Equal reports whether two values are equal under Compare.
func Equal(a, b Value) bool {
	if a.K == b.K && a.K != KindFloat {
		return a.N == b.N && a.S == b.S
	}
	return Compare(a, b) == 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	// NaNs: order them after everything, equal to each other.
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	}
	return -1
}

// NaturalCompare compares strings so that runs of digits compare by numeric
// value: "P2" < "P10", "cpu9" < "cpu10".
func NaturalCompare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			si := i
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			sj := j
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			na := strings.TrimLeft(a[si:i], "0")
			nb := strings.TrimLeft(b[sj:j], "0")
			if len(na) != len(nb) {
				return cmpInt(int64(len(na)), int64(len(nb)))
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			continue
		}
		if ca != cb {
			return cmpInt(int64(ca), int64(cb))
		}
		i++
		j++
	}
	switch {
	case i < len(a):
		return 1
	case j < len(b):
		return -1
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// CompareTuples orders value slices column by column.
func CompareTuples(a, b []Value) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmpInt(int64(len(a)), int64(len(b)))
}

// AppendKey appends a canonical binary encoding of v, for hashing: two values
// of the same kind have equal keys exactly when they are Equal (floats: -0
// and +0 share a key, and so do all NaNs).
func AppendKey(buf []byte, v Value) []byte {
	buf = append(buf, byte(v.K))
	switch v.K {
	case KindString, KindEntity, KindEnum:
		buf = binary.AppendUvarint(buf, uint64(len(v.S)))
		buf = append(buf, v.S...)
	case KindFloat:
		buf = binary.BigEndian.AppendUint64(buf, floatKeyBits(v.F()))
	default:
		buf = binary.BigEndian.AppendUint64(buf, uint64(v.N))
	}
	return buf
}

// AppendTupleKey appends the keys of several values.
func AppendTupleKey(buf []byte, vals []Value) []byte {
	for _, v := range vals {
		buf = AppendKey(buf, v)
	}
	return buf
}

// HashTuple is a 64-bit hash of vals' keys (AppendTupleKey) computed
// without encoding them: tuples whose keys are equal have equal hashes.
// Unequal keys may collide, so a table keyed by hash tells its entries
// apart with KeysEqual.
func HashTuple(vals []Value) uint64 {
	h := mix64(uint64(len(vals)) + 0x9e3779b97f4a7c15)
	for i := range vals {
		h = HashValue(h, &vals[i])
	}
	return h
}

// HashValue folds v's key into the hash h (see HashTuple).
func HashValue(h uint64, v *Value) uint64 {
	h = mix64(h ^ uint64(v.K)<<56)
	switch v.K {
	case KindString, KindEntity, KindEnum:
		s := v.S
		h = mix64(h ^ uint64(len(s)))
		for len(s) >= 8 {
			h = mix64(h ^ binary.LittleEndian.Uint64([]byte(s[:8])))
			s = s[8:]
		}
		// The last 1–7 bytes, as wyhash reads them: two overlapping
		// 4-byte words, or the first, middle and last byte (the length is
		// already in h, so these determine the bytes).
		switch n := len(s); {
		case n >= 4:
			lo := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
			hi := uint64(s[n-4]) | uint64(s[n-3])<<8 | uint64(s[n-2])<<16 | uint64(s[n-1])<<24
			h = mix64(h ^ (lo | hi<<32))
		case n > 0:
			h = mix64(h ^ (uint64(s[0]) | uint64(s[n>>1])<<8 | uint64(s[n-1])<<16))
		}
		return h
	case KindFloat:
		return mix64(h ^ floatKeyBits(v.F()))
	}
	return mix64(h ^ uint64(v.N))
}

// mix64 is SplitMix64's finalizer: every input bit affects every output
// bit.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// floatKeyBits are the bits AppendKey encodes a float by: -0 and +0 one
// value, every NaN one value.
func floatKeyBits(f float64) uint64 {
	switch {
	case f == 0:
		f = 0
	case f != f:
		f = math.NaN()
	}
	return math.Float64bits(f)
}

// KeysEqual reports whether two tuples have equal keys (AppendTupleKey),
// without encoding them.
func KeysEqual(a, b []Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.K != y.K {
			return false
		}
		switch x.K {
		case KindString, KindEntity, KindEnum:
			if x.S != y.S {
				return false
			}
		case KindFloat:
			if floatKeyBits(x.F()) != floatKeyBits(y.F()) {
				return false
			}
		default:
			if x.N != y.N {
				return false
			}
		}
	}
	return true
}

// Format prints v for output: identifiers, enum members and strings bare,
// numbers in Go notation, times in the given format, durations as 1h2m3s.
func (v Value) Format(tf TimeFormat) string {
	switch v.K {
	case KindEntity, KindEnum, KindString:
		return v.S
	case KindInt:
		return strconv.FormatInt(v.N, 10)
	case KindFloat:
		return strconv.FormatFloat(v.F(), 'g', -1, 64)
	case KindBool:
		return strconv.FormatBool(v.B())
	case KindTime:
		return FormatTime(v.N, tf)
	case KindDuration:
		return FormatDuration(v.N)
	}
	return "?"
}

// String prints v as a TQuel literal would be written: strings, entities
// and enum members quoted.
func (v Value) String() string {
	switch v.K {
	case KindEntity, KindEnum, KindString:
		return strconv.Quote(v.S)
	case KindTime:
		return strconv.Quote(FormatTime(v.N, TimeClock))
	}
	return v.Format(TimeClock)
}
