package db

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/tqmon/tqmon/algebra"
)

// Values (see schema.go for keys). Every value ends with a CRC-32C of the
// bytes before it; every variable-length field is preceded by its length
// (uvarint). Tuple values are encoded by attribute type: entity and string
// values as indexes into the record's dictionary of distinct strings, enum
// members by ordinal, int, time and duration as zigzag varints, floats as
// their 8 IEEE-754 bytes, bools as one byte.
//
//	block       'B' rel n nv first(8) dict elemsLen elems crc
//	            element: kind(1: 0 End, 1 Begin, 2 Event) dt(uvarint, from the
//	            previous element's time) [id delta (varint): End, Begin]
//	            [values: Begin, Event]
//	checkpoint  'C' rel time(8) n dict { id-delta(varint) time-from(uvarint) values }×n crc
//	ends        'E' rel bucket n { id-in-bucket(uvarint) to-delta(varint) }×n crc
//	relation    'R' rel name signature crc
//	state       'S' nextID nextSeq frontier(varint) flags extStart extEnd floor tuples elements blocks crc
//	spec        'P' name text crc
//	window      'W' from(8) to(8) crc
//	format      "tqmon-store" version(4)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Element kinds in blocks.
const (
	kEnd   uint8 = 0
	kBegin uint8 = 1
	kEvent uint8 = 2
)

// schema is what encoding a relation's values needs: each attribute's kind
// and, for enums, its members.
type schema struct {
	kinds []algebra.Kind
	enums [][]string
}

func schemaOf(r *algebra.Relation) *schema {
	s := &schema{kinds: make([]algebra.Kind, len(r.Attrs)), enums: make([][]string, len(r.Attrs))}
	for i, a := range r.Attrs {
		s.kinds[i] = a.Type.Kind
		if a.Type.Kind == algebra.KindEnum && a.Type.Enum != nil {
			s.enums[i] = a.Type.Enum.Members
		}
	}
	return s
}

// checkVals verifies a tuple's values against the schema.
func (s *schema) checkVals(vals []algebra.Value) error {
	if len(vals) != len(s.kinds) {
		return fmt.Errorf("%d values, want %d", len(vals), len(s.kinds))
	}
	for i, v := range vals {
		if v.K != s.kinds[i] {
			return fmt.Errorf("value %d is a %s, want %s", i+1, v.K, s.kinds[i])
		}
		if v.K == algebra.KindEnum && (v.N < 0 || int(v.N) >= len(s.enums[i])) {
			return fmt.Errorf("value %d: enum ordinal %d out of range", i+1, v.N)
		}
	}
	return nil
}

// dict collects the distinct strings of a record.
type dict struct {
	idx  map[string]uint32
	list []string
}

func (d *dict) id(s string) uint32 {
	if d.idx == nil {
		d.idx = map[string]uint32{}
	}
	if i, ok := d.idx[s]; ok {
		return i
	}
	i := uint32(len(d.list))
	d.idx[s] = i
	d.list = append(d.list, s)
	return i
}

func (d *dict) reset() {
	clear(d.idx)
	d.list = d.list[:0]
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendDict(b []byte, d *dict) []byte {
	b = binary.AppendUvarint(b, uint64(len(d.list)))
	for _, s := range d.list {
		b = appendStr(b, s)
	}
	return b
}

func appendVals(b []byte, s *schema, d *dict, vals []algebra.Value) []byte {
	for i, v := range vals {
		switch s.kinds[i] {
		case algebra.KindEntity, algebra.KindString:
			b = binary.AppendUvarint(b, uint64(d.id(v.S)))
		case algebra.KindEnum:
			b = binary.AppendUvarint(b, uint64(v.N))
		case algebra.KindFloat:
			b = binary.BigEndian.AppendUint64(b, uint64(v.N))
		case algebra.KindBool:
			if v.N != 0 {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		default: // int, time, duration
			b = binary.AppendVarint(b, v.N)
		}
	}
	return b
}

func appendCRC(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// rd reads a record, remembering the first error.
type rd struct {
	b    []byte
	err  error
	what string
}

func (r *rd) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s: %s", ErrCorrupt, r.what, fmt.Sprintf(format, args...))
	}
	r.b = nil
}

func (r *rd) byte1() byte {
	if len(r.b) < 1 {
		r.fail("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *rd) u64() uint64 {
	if len(r.b) < 8 {
		r.fail("truncated")
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *rd) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *rd) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a length and checks that at least min bytes per item remain.
func (r *rd) count(min int) int {
	n := r.uvarint()
	if r.err != nil {
		return 0
	}
	if min < 1 {
		min = 1
	}
	if n > uint64(len(r.b)/min) {
		r.fail("count %d exceeds the record", n)
		return 0
	}
	return int(n)
}

func (r *rd) str() string {
	n := r.count(1)
	if r.err != nil {
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *rd) dict() []string {
	n := r.count(1)
	out := make([]string, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.str())
	}
	return out
}

// vals decodes one tuple's values into out.
func (r *rd) vals(s *schema, dict []string, out []algebra.Value) {
	for i, k := range s.kinds {
		switch k {
		case algebra.KindEntity, algebra.KindString:
			j := r.uvarint()
			if r.err != nil {
				return
			}
			if j >= uint64(len(dict)) {
				r.fail("string index %d of %d", j, len(dict))
				return
			}
			out[i] = algebra.Value{K: k, S: dict[j]}
		case algebra.KindEnum:
			o := r.uvarint()
			if r.err != nil {
				return
			}
			if o >= uint64(len(s.enums[i])) {
				r.fail("enum ordinal %d of %d", o, len(s.enums[i]))
				return
			}
			out[i] = algebra.Value{K: k, S: s.enums[i][o], N: int64(o)}
		case algebra.KindFloat:
			out[i] = algebra.Value{K: k, N: int64(r.u64())}
		case algebra.KindBool:
			c := r.byte1()
			if c > 1 {
				r.fail("bool byte %d", c)
				return
			}
			out[i] = algebra.Value{K: k, N: int64(c)}
		default:
			out[i] = algebra.Value{K: k, N: r.varint()}
		}
	}
}

// openRecord checks a record's tag and CRC and returns a reader of its body.
func openRecord(data []byte, tag byte, what string) *rd {
	r := &rd{what: what}
	if len(data) < 5 {
		r.fail("%d bytes", len(data))
		return r
	}
	body := data[:len(data)-4]
	if binary.BigEndian.Uint32(data[len(data)-4:]) != crc32.Checksum(body, castagnoli) {
		r.fail("checksum mismatch")
		return r
	}
	if body[0] != tag {
		r.fail("tag %q, want %q", body[0], tag)
		return r
	}
	r.b = body[1:]
	return r
}

func (r *rd) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	return r.err
}

// addTime adds a non-negative delta to t, failing on overflow.
func (r *rd) addTime(t int64, d uint64) int64 {
	if d > uint64(math.MaxInt64)-uint64(t) { // the headroom above t, in uint64 arithmetic
		r.fail("time overflow")
		return t
	}
	return int64(uint64(t) + d)
}

// ---- blocks ----

// elem is one element of a relation's stream.
type elem struct {
	kind uint8
	t    int64
	id   uint64
	vals []algebra.Value
}

// phase orders elements at equal times: Ends first.
func (e *elem) phase() uint8 {
	if e.kind == kEnd {
		return 0
	}
	return 1
}

func elemCmp(a, b *elem) int {
	switch {
	case a.t < b.t:
		return -1
	case a.t > b.t:
		return 1
	case a.phase() != b.phase():
		return int(a.phase()) - int(b.phase())
	case a.id < b.id:
		return -1
	case a.id > b.id:
		return 1
	}
	return 0
}

// blockBuilder encodes a block incrementally: elements are encoded as they
// are added; bytes assembles header, dictionary and elements.
type blockBuilder struct {
	rel    uint16
	sch    *schema
	body   []byte
	d      dict
	n, nv  int
	first  int64
	last   int64
	lastID uint64
}

func newBlockBuilder(rel uint16, sch *schema) *blockBuilder {
	return &blockBuilder{rel: rel, sch: sch}
}

func (b *blockBuilder) reset() {
	b.body = b.body[:0]
	b.d.reset()
	b.n, b.nv, b.lastID = 0, 0, 0
}

// add appends an element; elements must come in time order.
func (b *blockBuilder) add(e *elem) {
	if b.n == 0 {
		b.first, b.last = e.t, e.t
	}
	b.body = append(b.body, e.kind)
	b.body = binary.AppendUvarint(b.body, uint64(e.t)-uint64(b.last))
	b.last = e.t
	if e.kind != kEvent {
		b.body = binary.AppendVarint(b.body, int64(e.id-b.lastID))
		b.lastID = e.id
	}
	if e.kind != kEnd {
		b.body = appendVals(b.body, b.sch, &b.d, e.vals)
		b.nv++
	}
	b.n++
}

// bytes returns the encoded block.
func (b *blockBuilder) bytes() []byte {
	out := make([]byte, 0, len(b.body)+64+16*len(b.d.list))
	out = append(out, 'B')
	out = binary.AppendUvarint(out, uint64(b.rel))
	out = binary.AppendUvarint(out, uint64(b.n))
	out = binary.AppendUvarint(out, uint64(b.nv))
	out = binary.BigEndian.AppendUint64(out, uint64(b.first))
	out = appendDict(out, &b.d)
	out = binary.AppendUvarint(out, uint64(len(b.body)))
	out = append(out, b.body...)
	return appendCRC(out)
}

func encodeBlock(rel uint16, sch *schema, elems []elem) []byte {
	b := newBlockBuilder(rel, sch)
	for i := range elems {
		b.add(&elems[i])
	}
	return b.bytes()
}

// blockReader decodes a block's elements one at a time.
type blockReader struct {
	r      rd
	sch    *schema
	dict   []string
	n, i   int
	nv     int
	first  int64
	t      int64
	id     uint64
	slab   []algebra.Value // values of the block's Begins and Events
	vi     int
	nattrs int
}

// openBlock checks a block's checksum and header.
func openBlock(data []byte, rel uint16, sch *schema) (*blockReader, error) {
	r := openRecord(data, 'B', "block")
	br := &blockReader{sch: sch, nattrs: len(sch.kinds)}
	if got := r.uvarint(); r.err == nil && got != uint64(rel) {
		r.fail("relation %d, want %d", got, rel)
	}
	br.n = r.count(2)
	if nv := r.uvarint(); r.err == nil && nv > uint64(br.n) {
		r.fail("%d value elements of %d", nv, br.n)
	} else {
		br.nv = int(nv)
	}
	br.first = int64(r.u64())
	br.dict = r.dict()
	elemsLen := r.count(1)
	if r.err == nil && elemsLen != len(r.b) {
		r.fail("elements take %d bytes, %d remain", elemsLen, len(r.b))
	}
	if r.err != nil {
		return nil, r.err
	}
	br.r = *r
	br.t = br.first
	br.slab = make([]algebra.Value, br.nv*br.nattrs)
	return br, nil
}

// next decodes the next element; ok is false at the end.
func (br *blockReader) next(e *elem) (bool, error) {
	if br.i == br.n {
		if err := br.r.end(); err != nil {
			return false, err
		}
		return false, nil
	}
	r := &br.r
	e.kind = r.byte1()
	dt := r.uvarint()
	if r.err != nil {
		return false, r.err
	}
	if e.kind > kEvent {
		r.fail("element kind %d", e.kind)
		return false, r.err
	}
	if br.i == 0 && dt != 0 {
		r.fail("first element not at the block's time")
		return false, r.err
	}
	br.t = r.addTime(br.t, dt)
	e.t = br.t
	e.id = 0
	if e.kind != kEvent {
		br.id += uint64(r.varint())
		e.id = br.id
	}
	e.vals = nil
	if e.kind != kEnd {
		if br.vi >= br.nv {
			r.fail("more value elements than the %d announced", br.nv)
			return false, r.err
		}
		vals := br.slab[br.vi*br.nattrs : (br.vi+1)*br.nattrs : (br.vi+1)*br.nattrs]
		br.vi++
		r.vals(br.sch, br.dict, vals)
		e.vals = vals
	}
	if r.err != nil {
		return false, r.err
	}
	if e.kind == kEnd && (e.t >= algebra.Forever || e.t == algebra.Beginning) {
		r.fail("an end at an infinity")
		return false, r.err
	}
	br.i++
	if br.i == br.n && br.vi != br.nv {
		r.fail("%d value elements, %d announced", br.vi, br.nv)
		return false, r.err
	}
	return true, nil
}

// decodeBlock decodes every element of a block.
func decodeBlock(data []byte, rel uint16, sch *schema) ([]elem, int64, error) {
	br, err := openBlock(data, rel, sch)
	if err != nil {
		return nil, 0, err
	}
	var out []elem
	for {
		var e elem
		ok, err := br.next(&e)
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			return out, br.first, nil
		}
		out = append(out, e)
	}
}

// ---- checkpoints ----

// openTuple is a tuple open at a checkpoint.
type openTuple struct {
	id   uint64
	from int64
	vals []algebra.Value
}

func encodeCheckpoint(rel uint16, sch *schema, at int64, tuples []openTuple) []byte {
	var d dict
	var body []byte
	var prev uint64
	for _, t := range tuples {
		body = binary.AppendVarint(body, int64(t.id-prev))
		prev = t.id
		body = binary.AppendUvarint(body, uint64(at)-uint64(t.from))
		body = appendVals(body, sch, &d, t.vals)
	}
	out := []byte{'C'}
	out = binary.AppendUvarint(out, uint64(rel))
	out = binary.BigEndian.AppendUint64(out, uint64(at))
	out = binary.AppendUvarint(out, uint64(len(tuples)))
	out = appendDict(out, &d)
	out = append(out, body...)
	return appendCRC(out)
}

func decodeCheckpoint(data []byte, rel uint16, sch *schema) (int64, []openTuple, error) {
	r := openRecord(data, 'C', "checkpoint")
	if got := r.uvarint(); r.err == nil && got != uint64(rel) {
		r.fail("relation %d, want %d", got, rel)
	}
	at := int64(r.u64())
	n := r.count(2)
	dict := r.dict()
	out := make([]openTuple, 0, n)
	slab := make([]algebra.Value, n*len(sch.kinds))
	var id uint64
	for i := 0; i < n && r.err == nil; i++ {
		id += uint64(r.varint())
		d := r.uvarint()
		if r.err == nil && (d == 0 || d > uint64(at)-(1<<63)) { // from = at−d ≥ Beginning
			r.fail("tuple not begun before the checkpoint")
		}
		vals := slab[i*len(sch.kinds) : (i+1)*len(sch.kinds) : (i+1)*len(sch.kinds)]
		r.vals(sch, dict, vals)
		out = append(out, openTuple{id: id, from: int64(uint64(at) - d), vals: vals})
	}
	if err := r.end(); err != nil {
		return 0, nil, err
	}
	return at, out, nil
}

// ---- ends ----

// endEntry says tuple id ends at to.
type endEntry struct {
	id uint64
	to int64
}

func encodeEnds(rel uint16, bucket uint64, ends []endEntry) []byte {
	out := []byte{'E'}
	out = binary.AppendUvarint(out, uint64(rel))
	out = binary.AppendUvarint(out, bucket)
	out = binary.AppendUvarint(out, uint64(len(ends)))
	var prev int64
	for _, e := range ends {
		out = binary.AppendUvarint(out, e.id-bucket<<EndsBucketBits)
		out = binary.AppendVarint(out, int64(uint64(e.to)-uint64(prev)))
		prev = e.to
	}
	return appendCRC(out)
}

func decodeEnds(data []byte, rel uint16) (uint64, []endEntry, error) {
	r := openRecord(data, 'E', "ends")
	if got := r.uvarint(); r.err == nil && got != uint64(rel) {
		r.fail("relation %d, want %d", got, rel)
	}
	bucket := r.uvarint()
	if r.err == nil && bucket > math.MaxUint64>>EndsBucketBits {
		r.fail("bucket %d out of range", bucket)
	}
	n := r.count(2)
	out := make([]endEntry, 0, n)
	var prev int64
	for i := 0; i < n && r.err == nil; i++ {
		off := r.uvarint()
		if r.err == nil && off >= 1<<EndsBucketBits {
			r.fail("id offset %d outside the bucket", off)
		}
		prev = int64(uint64(prev) + uint64(r.varint()))
		if r.err == nil && (prev >= algebra.Forever || prev == algebra.Beginning) {
			r.fail("an end at an infinity")
		}
		out = append(out, endEntry{id: bucket<<EndsBucketBits + off, to: prev})
	}
	if err := r.end(); err != nil {
		return 0, nil, err
	}
	return bucket, out, nil
}

// ---- relation descriptors and states ----

func encodeRelation(rel uint16, name, sig string) []byte {
	out := []byte{'R'}
	out = binary.AppendUvarint(out, uint64(rel))
	out = appendStr(out, name)
	out = appendStr(out, sig)
	return appendCRC(out)
}

func decodeRelation(data []byte) (uint16, string, string, error) {
	r := openRecord(data, 'R', "relation descriptor")
	rel := r.uvarint()
	if r.err == nil && rel > math.MaxUint16 {
		r.fail("relation id %d", rel)
	}
	name := r.str()
	sig := r.str()
	return uint16(rel), name, sig, r.end()
}

// relState is what a relation's writer keeps and readers consult.
type relState struct {
	nextID, nextSeq uint64
	frontier        int64 // latest time written in order
	extOK           bool  // extent: earliest time, latest finite time
	extStart        int64
	extEnd          int64
	floorOK         bool  // retention floor: the first checkpoint kept
	floor           int64 //
	tuples          uint64
	elements        uint64
	blocks          uint64
}

func encodeState(s *relState) []byte {
	out := []byte{'S'}
	out = binary.AppendUvarint(out, s.nextID)
	out = binary.AppendUvarint(out, s.nextSeq)
	out = binary.AppendVarint(out, s.frontier)
	var flags byte
	if s.extOK {
		flags |= 1
	}
	if s.floorOK {
		flags |= 2
	}
	out = append(out, flags)
	out = binary.AppendVarint(out, s.extStart)
	out = binary.AppendVarint(out, s.extEnd)
	out = binary.AppendVarint(out, s.floor)
	out = binary.AppendUvarint(out, s.tuples)
	out = binary.AppendUvarint(out, s.elements)
	out = binary.AppendUvarint(out, s.blocks)
	return appendCRC(out)
}

func decodeState(data []byte) (relState, error) {
	r := openRecord(data, 'S', "relation state")
	var s relState
	s.nextID = r.uvarint()
	s.nextSeq = r.uvarint()
	s.frontier = r.varint()
	flags := r.byte1()
	if r.err == nil && flags > 3 {
		r.fail("flags %x", flags)
	}
	s.extOK, s.floorOK = flags&1 != 0, flags&2 != 0
	s.extStart = r.varint()
	s.extEnd = r.varint()
	s.floor = r.varint()
	s.tuples = r.uvarint()
	s.elements = r.uvarint()
	s.blocks = r.uvarint()
	return s, r.end()
}

// ---- database-wide records ----

func encodeSpec(name, text string) []byte {
	out := []byte{'P'}
	out = appendStr(out, name)
	out = appendStr(out, text)
	return appendCRC(out)
}

func decodeSpec(data []byte) (string, string, error) {
	r := openRecord(data, 'P', "sensor description")
	name := r.str()
	text := r.str()
	return name, text, r.end()
}

func encodeWindow(w algebra.Window) []byte {
	out := []byte{'W'}
	out = binary.BigEndian.AppendUint64(out, uint64(w.From))
	out = binary.BigEndian.AppendUint64(out, uint64(w.To))
	return appendCRC(out)
}

func decodeWindow(data []byte) (algebra.Window, error) {
	r := openRecord(data, 'W', "observation window")
	w := algebra.Window{From: int64(r.u64()), To: int64(r.u64())}
	if r.err == nil && w.To < w.From {
		r.fail("window ends before it begins")
	}
	return w, r.end()
}

func encodeFormat() []byte {
	return binary.BigEndian.AppendUint32([]byte(magic), FormatVersion)
}

// decodeFormat returns the format version of a format record.
func decodeFormat(data []byte) (uint32, error) {
	if len(data) != len(magic)+4 || string(data[:len(magic)]) != magic {
		return 0, fmt.Errorf("%w: the format record is not tqmon's", ErrNotStore)
	}
	return binary.BigEndian.Uint32(data[len(magic):]), nil
}
