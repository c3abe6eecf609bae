package history

import (
	"bytes"
	"encoding/binary"
	"strings"

	"github.com/tqmon/tqmon/algebra"
)

// The fast paths below read the common notations straight from a field's
// bytes. Each accepts a subset of what its general parser (ParseValue,
// algebra.ParseTime) accepts and gives the same value; anything else —
// spaces, signs, out-of-range parts, errors — goes to the general parser,
// which also words the error.

// parseTimeFast reads integer nanoseconds of at most 18 digits, clock
// notation H:MM:SS[.fraction] with at most 6 digits of hours, or RFC 3339
// as YYYY-MM-DDTHH:MM:SS[.fraction]Z with a year from 1900 to 2200; ok is
// false for anything else. None of these is near the infinities.
func parseTimeFast(b []byte) (t algebra.Time, ok bool) {
	if len(b) == 0 {
		return 0, false
	}
	if n, ok := parseIntFast(b); ok {
		return n, true
	}
	if len(b) >= 20 && b[4] == '-' {
		return parseRFC3339Fast(b)
	}
	return parseClockFast(b)
}

// parseIntFast reads an optional '-' and 1 to 18 decimal digits.
func parseIntFast(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// digits reads b[i:i+n] as decimal digits.
func digits(b []byte, i, n int) (int64, bool) {
	if i+n > len(b) {
		return 0, false
	}
	var v int64
	for _, c := range b[i : i+n] {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// fraction reads ".d…" (1 to 9 digits) at the end of b from i as
// nanoseconds; i == len(b) is no fraction.
func fraction(b []byte, i int) (int64, bool) {
	if i == len(b) {
		return 0, true
	}
	n := len(b) - i - 1
	if b[i] != '.' || n < 1 || n > 9 {
		return 0, false
	}
	v, ok := digits(b, i+1, n)
	for ; n < 9; n++ {
		v *= 10
	}
	return v, ok
}

func parseClockFast(b []byte) (algebra.Time, bool) {
	neg := false
	if b[0] == '-' {
		neg, b = true, b[1:]
	}
	c := bytes.IndexByte(b, ':')
	if c < 1 || c > 6 {
		return 0, false
	}
	h, ok1 := digits(b, 0, c)
	if len(b) < c+6 || b[c+3] != ':' {
		return 0, false
	}
	m, ok2 := digits(b, c+1, 2)
	s, ok3 := digits(b, c+4, 2)
	ns, ok4 := fraction(b, c+6)
	if !ok1 || !ok2 || !ok3 || !ok4 || m > 59 || s > 59 {
		return 0, false
	}
	t := ((h*60+m)*60+s)*1e9 + ns
	if neg {
		t = -t
	}
	return t, true
}

func parseRFC3339Fast(b []byte) (algebra.Time, bool) {
	if b[len(b)-1] != 'Z' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	y, ok1 := digits(b, 0, 4)
	mo, ok2 := digits(b, 5, 2)
	d, ok3 := digits(b, 8, 2)
	h, ok4 := digits(b, 11, 2)
	mi, ok5 := digits(b, 14, 2)
	s, ok6 := digits(b, 17, 2)
	ns, ok7 := fraction(b[:len(b)-1], 19)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || !ok7 ||
		y < 1900 || y > 2200 || mo < 1 || mo > 12 || d < 1 || d > daysIn(mo, y) || h > 23 || mi > 59 || s > 59 {
		return 0, false
	}
	days := daysFromCivil(y, mo, d)
	return ((days*24+h)*60+mi)*60*1e9 + s*1e9 + ns, true
}

func daysIn(m, y int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the number of days from 1970-01-01 to y-m-d in the
// proleptic Gregorian calendar.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400 // y ≥ 1899 here: no negative division
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// parseTime reads a time field: the fast path, else the general parser on
// the field trimmed of spaces.
func parseTime(b []byte) (algebra.Time, error) {
	if t, ok := parseTimeFast(b); ok {
		return t, nil
	}
	return algebra.ParseTime(strings.TrimSpace(string(b)))
}

// interner keeps one copy of each short string read (entity identifiers,
// names), so tuples share it; it stops adding at maxInterned strings.
type interner struct {
	m map[string]string
}

const (
	maxInterned    = 1 << 20
	maxInternedLen = 64
)

func (in *interner) str(b []byte) string {
	if len(b) > maxInternedLen {
		return string(b)
	}
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if in.m == nil {
		in.m = map[string]string{}
	}
	if len(in.m) < maxInterned {
		in.m[s] = s
	}
	return s
}

// valueParser reads one attribute's values.
type valueParser struct {
	t     algebra.Type
	enums map[string]algebra.Value
}

func newValueParser(t algebra.Type) valueParser {
	p := valueParser{t: t}
	if t.Kind == algebra.KindEnum {
		p.enums = map[string]algebra.Value{}
		for _, name := range t.Enum.Members {
			v, _ := t.Enum.Value(name)
			p.enums[name] = v
		}
	}
	return p
}

// parse is ParseValue over a field's bytes.
func (p *valueParser) parse(b []byte, in *interner) (algebra.Value, error) {
	switch p.t.Kind {
	case algebra.KindEntity:
		if len(b) > 0 && b[0] > ' ' && b[len(b)-1] > ' ' && b[0] < 0x80 && b[len(b)-1] < 0x80 {
			return algebra.Entity(in.str(b)), nil
		}
	case algebra.KindEnum:
		if v, ok := p.enums[string(b)]; ok {
			return v, nil
		}
	case algebra.KindString:
		return algebra.Str(in.str(b)), nil
	case algebra.KindInt:
		if n, ok := parseIntFast(b); ok {
			return algebra.Int(n), nil
		}
	case algebra.KindTime:
		if t, ok := parseTimeFast(b); ok {
			return algebra.TimeVal(t), nil
		}
	}
	return ParseValue(string(b), p.t)
}

// vectors keeps one copy of each attribute-value vector a relation's rows
// hold, keyed by the text of their attribute fields, so that rows alike
// share it: a history's rows mostly repeat a few vectors (a process and
// its state, a process and the mailbox it sends to), and a row is then
// its times and a slice of a shared vector — a loaded tuple holds about
// the bytes of its CSV row (TestLoadMemoryBound), not a copy of its values
// — and its values are not parsed again. A hit is a row whose attribute
// fields are byte for byte those of a good row before, so its values are
// those (values are never written once read). It is bounded: at most
// maxVectors vectors, of at most maxVectorKey bytes of fields each, and
// a relation whose first vectorProbe rows repeat less than half the time
// stops being interned (its map dropped), paying nothing more than the
// parse it always paid.
type vectors struct {
	m          map[string][]algebra.Value
	buf        []byte
	tries, hit int
	off        bool
}

const (
	maxVectors   = 1 << 16
	maxVectorKey = 256
	vectorProbe  = 4 << 10
)

// key is the text of a record's attribute fields (at cols), each after its
// length, so that no two records' keys are alike unless their fields are;
// nil when the vectors are off or the key would be too long.
func (v *vectors) key(rec [][]byte, cols []int) []byte {
	if v.off {
		return nil
	}
	b := v.buf[:0]
	for _, i := range cols {
		b = binary.AppendUvarint(b, uint64(len(rec[i])))
		b = append(b, rec[i]...)
		if len(b) > maxVectorKey {
			return nil
		}
	}
	v.buf = b
	return b
}

// lookup is the vector of a key made by key; false without one.
func (v *vectors) lookup(key []byte) ([]algebra.Value, bool) {
	if key == nil {
		return nil, false
	}
	v.tries++
	vals, ok := v.m[string(key)]
	if ok {
		v.hit++
	} else if v.tries >= vectorProbe && 2*v.hit < v.tries {
		v.off, v.m = true, nil // rows that seldom repeat
	}
	return vals, ok
}

// add keeps vals, read from the fields of key, unless the vectors are
// full (or off, or key nil).
func (v *vectors) add(key []byte, vals []algebra.Value) {
	if key == nil || v.off || len(v.m) >= maxVectors {
		return
	}
	if v.m == nil {
		v.m = map[string][]algebra.Value{}
	}
	v.m[string(key)] = vals
}
