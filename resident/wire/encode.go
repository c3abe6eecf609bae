package wire

// Binary encoding of Hello, Batch and Command.
//
// Every message is one frame: a one-byte tag, the protocol version as a
// uvarint, then the body. Integers are varints (encoding/binary: uvarint for
// unsigned, zigzag varint for signed); strings are a uvarint length then the
// bytes; slices are a uvarint count then the elements. A frame is at most
// MaxFrame bytes; decoders refuse larger input, bound every count and length
// by the input that remains, and refuse trailing bytes.
//
//	Hello    'H' version:uvarint(Hello.Version)
//	         Name:string SDL:string
//	         Types:count string* Sensors:count string*
//	         MonoBase:varint WallBase:varint Period:varint
//	         Caps:count string*
//
//	Batch    'B' version:uvarint(Version)
//	         Watermark:varint
//	         Defs:count (Key:uvarint Type:uvarint ID:string)*
//	         Packets:count packet*
//	         Counts:count (Sensor:uvarint Wanted:uvarint Drops:uvarint)*
//	         Applied:uvarint AppliedAt:varint
//
//	packet   head:byte Sensor:uvarint dTS:varint
//	         [Tuple:uvarint]        if head&0x10
//	         [TS−Begin:varint]      if head&0x20
//	         [Vals:count value*]    if head&0x40 (count ≥ 1)
//	         head = Kind (low 4 bits) | 0x10 Tuple≠0 | 0x20 Begin≠0 | 0x40 Vals≠∅;
//	         dTS = TS − previous packet's TS; the first packet's is
//	         relative to the batch's Watermark (so a packet costs a few
//	         bytes of time, not a full monotonic timestamp).
//
//	value    head:byte [N] [S:string]
//	         head = Kind (low 5 bits) | 0x40 N≠0 | 0x80 S≠"";
//	         N is a zigzag varint for VInt, VTime and VDuration, 8 bytes
//	         little-endian for VFloat (float bits), a uvarint otherwise.
//	         Both fields are carried whatever the kind, so any Value round-
//	         trips (a trigger Cond names an entity in S).
//
//	Command  'C' version:uvarint(Version) Kind:byte fields:uvarint
//	         then, in this order, each field whose bit is set in fields:
//	         1 ID:uvarint  2 Sensor:uvarint  4 Type:uvarint  8 Entity:string
//	         16 All (no payload)  32 On:uvarint  64 Attr:uvarint
//	         128 Conds:count (Attr:uvarint value)*  256 Period:varint
//	         512 While (no payload)  1024 Pred:pred  2048 Keep:count uvarint*
//	         4096 Count:uvarint  8192 Text:string  16384 Args:count string*
//	         32768 Limit:varint
//
//	pred     op:byte then: for PAnd/POr Kids:count pred*  (count ≥ 1);
//	         for PNot one pred; for a comparison Attr:uvarint value.
//	         At most MaxPredNodes nodes, nested at most MaxPredDepth deep.
//	         A field is present when it is not its zero value.
//
// Decoding an empty count gives a nil slice. A Hello whose version is not
// Version is refused with a *VersionError (its body's layout may differ);
// Batch and Command frames of another version are refused likewise.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Message tags: the first byte of every frame.
const (
	TagHello   byte = 'H'
	TagBatch   byte = 'B'
	TagCommand byte = 'C'
)

// ErrFrameTooLarge is wrapped by the errors for frames over a size limit
// (MaxFrame, or a smaller limit given to EncodeSplit).
var ErrFrameTooLarge = errors.New("frame too large")

// VersionError reports a frame of another protocol version.
type VersionError struct {
	Got uint64
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("wire: protocol version %d, this side speaks version %d", e.Got, Version)
}

func tooLarge(what string, n, limit int) error {
	return fmt.Errorf("wire: %s: %w: %d bytes exceed the %d-byte limit", what, ErrFrameTooLarge, n, limit)
}

// Packet header bits.
const (
	pkKindMask = 0x0f
	pkTuple    = 0x10
	pkBegin    = 0x20
	pkVals     = 0x40
	pkReserved = 0x80
)

// Value header bits.
const (
	vKindMask = 0x1f
	vReserved = 0x20
	vN        = 0x40
	vS        = 0x80
)

// Command field bits.
const (
	cfID = 1 << iota
	cfSensor
	cfType
	cfEntity
	cfAll
	cfOn
	cfAttr
	cfConds
	cfPeriod
	cfWhile
	cfPred
	cfKeep
	cfCount
	cfText
	cfArgs
	cfLimit
	cfAllFields = cfLimit<<1 - 1
)

// Smallest encodings, to bound counts by the remaining input.
const (
	minString = 1 // length
	minDef    = 3 // key, type, id length
	minPacket = 3 // head, sensor, dTS
	minValue  = 1 // head
	minCount  = 3 // sensor, wanted, drops
	minCond   = 2 // attr, value head
)

func validPacketKind(k PacketKind) bool   { return k >= PEvent && k <= PResultLost }
func validValueKind(k ValueKind) bool     { return k >= VEntity && k <= VEnum }
func validCommandKind(k CommandKind) bool { return k >= CEnable && k <= CPlan }
func validPredOp(o PredOp) bool           { return o >= PAnd && o <= PPrefix }

// ---- encoding ----

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendValue(b []byte, v *Value) ([]byte, error) {
	if !validValueKind(v.Kind) {
		return b, fmt.Errorf("unknown value kind %d", v.Kind)
	}
	h := byte(v.Kind)
	if v.N != 0 {
		h |= vN
	}
	if v.S != "" {
		h |= vS
	}
	b = append(b, h)
	if v.N != 0 {
		switch v.Kind {
		case VInt, VTime, VDuration:
			b = binary.AppendVarint(b, int64(v.N))
		case VFloat:
			b = binary.LittleEndian.AppendUint64(b, v.N)
		default:
			b = binary.AppendUvarint(b, v.N)
		}
	}
	if v.S != "" {
		b = appendString(b, v.S)
	}
	return b, nil
}

func appendHeader(b []byte, tag byte, version uint64) []byte {
	return binary.AppendUvarint(append(b, tag), version)
}

// AppendBinary appends h's encoding to b.
func (h *Hello) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	b = appendHeader(b, TagHello, uint64(h.Version))
	b = appendString(b, h.Name)
	b = appendString(b, h.SDL)
	b = binary.AppendUvarint(b, uint64(len(h.Types)))
	for _, s := range h.Types {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(h.Sensors)))
	for _, s := range h.Sensors {
		b = appendString(b, s)
	}
	b = binary.AppendVarint(b, h.MonoBase)
	b = binary.AppendVarint(b, h.WallBase)
	b = binary.AppendVarint(b, h.Period)
	b = binary.AppendUvarint(b, uint64(len(h.Caps)))
	for _, s := range h.Caps {
		b = appendString(b, s)
	}
	if n := len(b) - start; n > MaxFrame {
		return b[:start], tooLarge("hello", n, MaxFrame)
	}
	return b, nil
}

// MarshalBinary encodes h. It encodes h.Version as is (a resident sets it
// to Version).
func (h *Hello) MarshalBinary() ([]byte, error) {
	return h.AppendBinary(make([]byte, 0, 64+len(h.Name)+len(h.SDL)+16*(len(h.Types)+len(h.Sensors))))
}

// AppendBinary appends b's encoding to dst.
func (b *Batch) AppendBinary(dst []byte) ([]byte, error) {
	start := len(dst)
	out, err := b.appendBinary(dst)
	if err != nil {
		return dst[:start], err
	}
	if n := len(out) - start; n > MaxFrame {
		return dst[:start], tooLarge("batch", n, MaxFrame)
	}
	return out, nil
}

func (b *Batch) appendBinary(o []byte) ([]byte, error) {
	o = appendHeader(o, TagBatch, Version)
	o = binary.AppendVarint(o, b.Watermark)
	o = binary.AppendUvarint(o, uint64(len(b.Defs)))
	for i := range b.Defs {
		d := &b.Defs[i]
		o = binary.AppendUvarint(o, d.Key)
		o = binary.AppendUvarint(o, uint64(d.Type))
		o = appendString(o, d.ID)
	}
	o = binary.AppendUvarint(o, uint64(len(b.Packets)))
	prev := b.Watermark
	for i := range b.Packets {
		p := &b.Packets[i]
		if !validPacketKind(p.Kind) {
			return o, fmt.Errorf("wire: batch: packet %d: unknown packet kind %d", i, p.Kind)
		}
		h := byte(p.Kind)
		if p.Tuple != 0 {
			h |= pkTuple
		}
		if p.Begin != 0 {
			h |= pkBegin
		}
		if len(p.Vals) != 0 {
			h |= pkVals
		}
		o = append(o, h)
		o = binary.AppendUvarint(o, uint64(p.Sensor))
		o = binary.AppendVarint(o, p.TS-prev) // wraps; decoding wraps back
		prev = p.TS
		if p.Tuple != 0 {
			o = binary.AppendUvarint(o, p.Tuple)
		}
		if p.Begin != 0 {
			o = binary.AppendVarint(o, p.TS-p.Begin)
		}
		if len(p.Vals) != 0 {
			o = binary.AppendUvarint(o, uint64(len(p.Vals)))
			for j := range p.Vals {
				var err error
				if o, err = appendValue(o, &p.Vals[j]); err != nil {
					return o, fmt.Errorf("wire: batch: packet %d: value %d: %w", i, j, err)
				}
			}
		}
	}
	o = binary.AppendUvarint(o, uint64(len(b.Counts)))
	for i := range b.Counts {
		c := &b.Counts[i]
		o = binary.AppendUvarint(o, uint64(c.Sensor))
		o = binary.AppendUvarint(o, c.Wanted)
		o = binary.AppendUvarint(o, c.Drops)
	}
	o = binary.AppendUvarint(o, b.Applied)
	o = binary.AppendVarint(o, b.AppliedAt)
	return o, nil
}

// sizeHint estimates b's encoded size.
func (b *Batch) sizeHint() int {
	n := 32 + 8*len(b.Defs) + 6*len(b.Counts) + 6*len(b.Packets)
	for i := range b.Defs {
		n += len(b.Defs[i].ID)
	}
	for i := range b.Packets {
		p := &b.Packets[i]
		if p.Tuple != 0 {
			n += 4
		}
		if p.Begin != 0 {
			n += 4
		}
		for j := range p.Vals {
			n += 4 + len(p.Vals[j].S)
		}
	}
	return n
}

// MarshalBinary encodes b.
func (b *Batch) MarshalBinary() ([]byte, error) {
	return b.AppendBinary(make([]byte, 0, b.sizeHint()))
}

// EncodeSplit encodes b as one frame when it fits in limit bytes (limit ≤ 0
// or over MaxFrame means MaxFrame), and otherwise as several frames, each at
// most limit bytes, that together say what b says: entity definitions come
// before the packets that follow them, packets keep their order, Counts go
// with the last frame, and each earlier frame's watermark is the lesser of
// b.Watermark and one less than the next frame's first packet timestamp
// (Applied and AppliedAt go with every frame)
// (splits fall between distinct timestamps where possible), so watermarks
// stay monotonic and every watermark promise still holds. It fails with
// ErrFrameTooLarge when a single definition, packet or count does not fit.
func (b *Batch) EncodeSplit(limit int) ([][]byte, error) {
	if limit <= 0 || limit > MaxFrame {
		limit = MaxFrame
	}
	var frames [][]byte
	floor := int64(math.MinInt64)
	err := b.encodeSplit(limit, &floor, &frames)
	return frames, err
}

// floor is the last watermark sent: with packets out of order a computed
// watermark could fall below it.
func (b *Batch) encodeSplit(limit int, floor *int64, frames *[][]byte) error {
	if b.Watermark < *floor {
		c := *b
		c.Watermark = *floor
		b = &c
	}
	enc, err := b.appendBinary(make([]byte, 0, b.sizeHint()))
	if err != nil {
		return err
	}
	if len(enc) <= limit {
		*floor = b.Watermark
		*frames = append(*frames, enc)
		return nil
	}
	var first, rest Batch
	switch {
	case len(b.Packets) >= 2:
		k := splitPoint(b.Packets)
		first = Batch{Defs: b.Defs, Packets: b.Packets[:k]}
		rest = Batch{Packets: b.Packets[k:], Watermark: b.Watermark, Counts: b.Counts}
	case len(b.Defs) >= 2 || len(b.Defs) == 1 && (len(b.Packets) > 0 || len(b.Counts) > 0):
		k := (len(b.Defs) + 1) / 2
		first = Batch{Defs: b.Defs[:k]}
		rest = Batch{Defs: b.Defs[k:], Packets: b.Packets, Watermark: b.Watermark, Counts: b.Counts}
	case len(b.Counts) >= 2 || len(b.Counts) == 1 && len(b.Packets) > 0:
		if len(b.Counts) == 1 { // one packet, one count: send the packet first
			first = Batch{Packets: b.Packets}
			rest = Batch{Watermark: b.Watermark, Counts: b.Counts}
		} else {
			k := len(b.Counts) / 2
			first = Batch{Packets: b.Packets, Counts: b.Counts[:k]}
			rest = Batch{Watermark: b.Watermark, Counts: b.Counts[k:]}
		}
	default:
		return tooLarge("batch element", len(enc), limit)
	}
	first.Watermark = b.Watermark
	first.Applied, first.AppliedAt = b.Applied, b.AppliedAt
	rest.Applied, rest.AppliedAt = b.Applied, b.AppliedAt
	if len(rest.Packets) > 0 {
		if ts := rest.Packets[0].TS; ts != math.MinInt64 && ts-1 < first.Watermark {
			first.Watermark = ts - 1
		}
	}
	if err := first.encodeSplit(limit, floor, frames); err != nil {
		return err
	}
	return rest.encodeSplit(limit, floor, frames)
}

// splitPoint picks k in [1, len(ps)) near the middle with ps[k-1].TS <
// ps[k].TS when there is one.
func splitPoint(ps []Packet) int {
	mid := len(ps) / 2
	for d := 0; d < len(ps); d++ {
		for _, k := range [2]int{mid + d, mid - d} {
			if k >= 1 && k < len(ps) && ps[k-1].TS < ps[k].TS {
				return k
			}
		}
	}
	return mid
}

// AppendBinary appends c's encoding to b.
func (c *Command) AppendBinary(b []byte) ([]byte, error) {
	if !validCommandKind(c.Kind) {
		return b, fmt.Errorf("wire: command: unknown command kind %d", c.Kind)
	}
	start := len(b)
	var f uint64
	if c.ID != 0 {
		f |= cfID
	}
	if c.Sensor != 0 {
		f |= cfSensor
	}
	if c.Type != 0 {
		f |= cfType
	}
	if c.Entity != "" {
		f |= cfEntity
	}
	if c.All {
		f |= cfAll
	}
	if c.On != 0 {
		f |= cfOn
	}
	if c.Attr != 0 {
		f |= cfAttr
	}
	if len(c.Conds) != 0 {
		f |= cfConds
	}
	if c.Period != 0 {
		f |= cfPeriod
	}
	if c.While {
		f |= cfWhile
	}
	if c.Pred != nil {
		f |= cfPred
	}
	if len(c.Keep) != 0 {
		f |= cfKeep
	}
	if c.Count != 0 {
		f |= cfCount
	}
	if c.Text != "" {
		f |= cfText
	}
	if len(c.Args) != 0 {
		f |= cfArgs
	}
	if c.Limit != 0 {
		f |= cfLimit
	}
	b = appendHeader(b, TagCommand, Version)
	b = append(b, byte(c.Kind))
	b = binary.AppendUvarint(b, f)
	if f&cfID != 0 {
		b = binary.AppendUvarint(b, c.ID)
	}
	if f&cfSensor != 0 {
		b = binary.AppendUvarint(b, uint64(c.Sensor))
	}
	if f&cfType != 0 {
		b = binary.AppendUvarint(b, uint64(c.Type))
	}
	if f&cfEntity != 0 {
		b = appendString(b, c.Entity)
	}
	if f&cfOn != 0 {
		b = binary.AppendUvarint(b, uint64(c.On))
	}
	if f&cfAttr != 0 {
		b = binary.AppendUvarint(b, uint64(c.Attr))
	}
	if f&cfConds != 0 {
		b = binary.AppendUvarint(b, uint64(len(c.Conds)))
		for i := range c.Conds {
			b = binary.AppendUvarint(b, uint64(c.Conds[i].Attr))
			var err error
			if b, err = appendValue(b, &c.Conds[i].Value); err != nil {
				return b[:start], fmt.Errorf("wire: command: cond %d: %w", i, err)
			}
		}
	}
	if f&cfPeriod != 0 {
		b = binary.AppendVarint(b, c.Period)
	}
	if f&cfPred != 0 {
		var err error
		nodes := 0
		if b, err = appendPred(b, c.Pred, 1, &nodes); err != nil {
			return b[:start], fmt.Errorf("wire: command: pred: %w", err)
		}
	}
	if f&cfKeep != 0 {
		b = binary.AppendUvarint(b, uint64(len(c.Keep)))
		for _, a := range c.Keep {
			b = binary.AppendUvarint(b, uint64(a))
		}
	}
	if f&cfCount != 0 {
		b = binary.AppendUvarint(b, uint64(c.Count))
	}
	if f&cfText != 0 {
		b = appendString(b, c.Text)
	}
	if f&cfArgs != 0 {
		b = binary.AppendUvarint(b, uint64(len(c.Args)))
		for _, a := range c.Args {
			b = appendString(b, a)
		}
	}
	if f&cfLimit != 0 {
		b = binary.AppendVarint(b, c.Limit)
	}
	if n := len(b) - start; n > MaxFrame {
		return b[:start], tooLarge("command", n, MaxFrame)
	}
	return b, nil
}

// appendPred appends p's encoding, refusing what a decoder would refuse.
func appendPred(b []byte, p *Pred, depth int, nodes *int) ([]byte, error) {
	if *nodes++; *nodes > MaxPredNodes {
		return b, fmt.Errorf("more than %d nodes", MaxPredNodes)
	}
	if depth > MaxPredDepth {
		return b, fmt.Errorf("nested more than %d deep", MaxPredDepth)
	}
	if !validPredOp(p.Op) {
		return b, fmt.Errorf("unknown operator %d", p.Op)
	}
	b = append(b, byte(p.Op))
	switch p.Op {
	case PAnd, POr:
		if len(p.Kids) == 0 {
			return b, fmt.Errorf("%v with no operands", p.Op)
		}
		b = binary.AppendUvarint(b, uint64(len(p.Kids)))
	case PNot:
		if len(p.Kids) != 1 {
			return b, fmt.Errorf("not with %d operands", len(p.Kids))
		}
	default:
		b = binary.AppendUvarint(b, uint64(p.Attr))
		return appendValue(b, &p.Value)
	}
	for i := range p.Kids {
		var err error
		if b, err = appendPred(b, &p.Kids[i], depth+1, nodes); err != nil {
			return b, err
		}
	}
	return b, nil
}

// MarshalBinary encodes c.
func (c *Command) MarshalBinary() ([]byte, error) {
	return c.AppendBinary(make([]byte, 0, 32+len(c.Entity)+8*len(c.Conds)))
}

// ---- decoding ----

// decoder reads a frame; the first error sticks and every later read
// returns zero values.
type decoder struct {
	buf  []byte
	off  int
	what string // "batch", "command", "hello"
	ctx  string // where in the message, for errors: ctx ctxIndex
	idx  int
	err  error
}

func (d *decoder) failf(format string, args ...any) {
	if d.err != nil {
		return
	}
	where := d.what
	if d.ctx != "" {
		where += fmt.Sprintf(": %s %d", d.ctx, d.idx)
	}
	d.err = fmt.Errorf("wire: %s: at byte %d: %s", where, d.off, fmt.Sprintf(format, args...))
}

func (d *decoder) rem() int { return len(d.buf) - d.off }

func (d *decoder) byte1(field string) byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.buf) {
		d.failf("truncated reading %s", field)
		return 0
	}
	c := d.buf[d.off]
	d.off++
	return c
}

func (d *decoder) uvarint(field string) uint64 { return d.uvarintOf(field, "") }

// uvarintOf reads a uvarint named field+suffix in errors (concatenated only
// then: decoding allocates nothing for names).
func (d *decoder) uvarintOf(field, suffix string) uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.buf[d.off:])
	if n <= 0 {
		if n == 0 {
			d.failf("truncated reading %s%s", field, suffix)
		} else {
			d.failf("%s%s: varint overflows 64 bits", field, suffix)
		}
		return 0
	}
	d.off += n
	return x
}

func (d *decoder) varint(field string) int64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.buf[d.off:])
	if n <= 0 {
		if n == 0 {
			d.failf("truncated reading %s", field)
		} else {
			d.failf("%s: varint overflows 64 bits", field)
		}
		return 0
	}
	d.off += n
	return x
}

func (d *decoder) u16(field string) uint16 {
	x := d.uvarint(field)
	if x > math.MaxUint16 {
		d.failf("%s %d exceeds %d", field, x, math.MaxUint16)
		return 0
	}
	return uint16(x)
}

func (d *decoder) fixed64(field string) uint64 {
	if d.err != nil {
		return 0
	}
	if d.rem() < 8 {
		d.failf("truncated reading %s", field)
		return 0
	}
	x := binary.LittleEndian.Uint64(d.buf[d.off:])
	d.off += 8
	return x
}

// count reads a slice length, each element taking at least min bytes.
func (d *decoder) count(field string, min int) int {
	x := d.uvarintOf(field, " count")
	if d.err != nil {
		return 0
	}
	if x > uint64(d.rem()/min) {
		d.failf("%s count %d exceeds what the remaining %d bytes can hold", field, x, d.rem())
		return 0
	}
	return int(x)
}

func (d *decoder) string(field string) string {
	n := d.uvarintOf(field, " length")
	if d.err != nil {
		return ""
	}
	if n > uint64(d.rem()) {
		d.failf("%s length %d exceeds the remaining %d bytes", field, n, d.rem())
		return ""
	}
	s := string(d.buf[d.off : d.off+int(n)])
	d.off += int(n)
	return s
}

func (d *decoder) value(v *Value) {
	h := d.byte1("value head")
	if d.err != nil {
		return
	}
	k := ValueKind(h & vKindMask)
	if !validValueKind(k) {
		d.off--
		d.failf("unknown value kind %d", k)
		return
	}
	if h&vReserved != 0 {
		d.off--
		d.failf("reserved bit set in value head %#x", h)
		return
	}
	v.Kind = k
	if h&vN != 0 {
		switch k {
		case VInt, VTime, VDuration:
			v.N = uint64(d.varint("value"))
		case VFloat:
			v.N = d.fixed64("value")
		default:
			v.N = d.uvarint("value")
		}
	}
	if h&vS != 0 {
		v.S = d.string("value string")
	}
}

// pred decodes a predicate node at depth (1: the root), counting nodes
// against MaxPredNodes.
func (d *decoder) pred(p *Pred, depth int, nodes *int) {
	if *nodes++; *nodes > MaxPredNodes {
		d.failf("more than %d predicate nodes", MaxPredNodes)
		return
	}
	if depth > MaxPredDepth {
		d.failf("predicate nested more than %d deep", MaxPredDepth)
		return
	}
	d.idx = *nodes
	op := PredOp(d.byte1("operator"))
	if d.err != nil {
		return
	}
	if !validPredOp(op) {
		d.off--
		d.failf("unknown predicate operator %d", op)
		return
	}
	p.Op = op
	n := 1
	switch op {
	case PAnd, POr:
		if n = d.count("operand", 2); d.err == nil && n == 0 {
			d.failf("%v with no operands", op)
		}
	case PNot:
	default:
		p.Attr = d.u16("attr")
		d.value(&p.Value)
		return
	}
	if d.err != nil {
		return
	}
	p.Kids = make([]Pred, n)
	for i := range p.Kids {
		if d.pred(&p.Kids[i], depth+1, nodes); d.err != nil {
			return
		}
	}
}

func (d *decoder) header(tag byte) uint64 {
	if len(d.buf) > MaxFrame {
		d.err = tooLarge(d.what, len(d.buf), MaxFrame)
		return 0
	}
	t := d.byte1("tag")
	if d.err != nil {
		return 0
	}
	if t != tag {
		d.off--
		d.failf("tag %q, want %q", t, tag)
		return 0
	}
	return d.uvarint("version")
}

func (d *decoder) version(v uint64) {
	if d.err == nil && v != Version {
		d.err = &VersionError{Got: v}
	}
}

func (d *decoder) finish() error {
	d.ctx = ""
	if d.err == nil && d.off != len(d.buf) {
		d.failf("%d bytes of trailing garbage", d.rem())
	}
	return d.err
}

// UnmarshalBinary decodes a Hello frame into h. A frame of another
// protocol version gives a *VersionError (with h.Version set to it).
func (h *Hello) UnmarshalBinary(data []byte) error {
	d := decoder{buf: data, what: "hello"}
	*h = Hello{}
	v := d.header(TagHello)
	if d.err == nil && v > math.MaxUint32 {
		d.failf("version %d exceeds 32 bits", v)
	}
	if d.err != nil {
		return d.err
	}
	h.Version = uint32(v)
	if d.version(v); d.err != nil {
		return d.err
	}
	h.Name = d.string("name")
	h.SDL = d.string("sdl")
	if n := d.count("types", minString); n > 0 {
		h.Types = make([]string, n)
		for i := range h.Types {
			if h.Types[i] = d.string("type"); d.err != nil {
				break
			}
		}
	}
	if n := d.count("sensors", minString); n > 0 {
		h.Sensors = make([]string, n)
		for i := range h.Sensors {
			if h.Sensors[i] = d.string("sensor"); d.err != nil {
				break
			}
		}
	}
	h.MonoBase = d.varint("mono base")
	h.WallBase = d.varint("wall base")
	h.Period = d.varint("period")
	if n := d.count("caps", minString); n > 0 {
		h.Caps = make([]string, n)
		for i := range h.Caps {
			if h.Caps[i] = d.string("cap"); d.err != nil {
				break
			}
		}
	}
	if err := d.finish(); err != nil {
		*h = Hello{Version: h.Version}
		return err
	}
	return nil
}

// UnmarshalBinary decodes a Batch frame into b (replacing its contents).
func (b *Batch) UnmarshalBinary(data []byte) error {
	d := decoder{buf: data, what: "batch"}
	*b = Batch{}
	d.version(d.header(TagBatch))
	b.Watermark = d.varint("watermark")
	if n := d.count("defs", minDef); n > 0 {
		b.Defs = make([]EntityDef, n)
		for i := range b.Defs {
			e := &b.Defs[i]
			e.Key = d.uvarint("def key")
			e.Type = d.u16("def type")
			e.ID = d.string("def id")
			if d.err != nil {
				break
			}
		}
	}
	if n := d.count("packets", minPacket); n > 0 {
		b.Packets = make([]Packet, n)
		var slab []Value // values of all packets, sliced per packet
		prev := b.Watermark
		for i := range b.Packets {
			if d.err != nil {
				break
			}
			p := &b.Packets[i]
			d.ctx, d.idx = "packet", i
			h := d.byte1("packet head")
			if d.err != nil {
				break
			}
			p.Kind = PacketKind(h & pkKindMask)
			if !validPacketKind(p.Kind) {
				d.off--
				d.failf("unknown packet kind %d", p.Kind)
				break
			}
			if h&pkReserved != 0 {
				d.off--
				d.failf("reserved bit set in packet head %#x", h)
				break
			}
			p.Sensor = d.u16("sensor")
			p.TS = prev + d.varint("timestamp")
			prev = p.TS
			if h&pkTuple != 0 {
				p.Tuple = d.uvarint("tuple")
			}
			if h&pkBegin != 0 {
				p.Begin = p.TS - d.varint("begin")
			}
			if h&pkVals != 0 {
				nv := d.count("values", minValue)
				if d.err == nil && nv == 0 {
					d.failf("values flag set with no values")
				}
				if d.err != nil {
					break
				}
				if cap(slab)-len(slab) < nv {
					// Room for this packet and, roughly, as many values per
					// packet for the packets left.
					c := nv * (n - i)
					if c > d.rem() {
						c = d.rem()
					}
					if c < nv {
						c = nv
					}
					slab = make([]Value, 0, c)
				}
				start := len(slab)
				slab = slab[:start+nv]
				for j := start; j < start+nv; j++ {
					d.value(&slab[j])
				}
				p.Vals = slab[start : start+nv : start+nv]
			}
		}
		d.ctx = ""
	}
	if n := d.count("counts", minCount); n > 0 {
		b.Counts = make([]Count, n)
		for i := range b.Counts {
			c := &b.Counts[i]
			c.Sensor = d.u16("count sensor")
			c.Wanted = d.uvarint("count wanted")
			c.Drops = d.uvarint("count drops")
			if d.err != nil {
				break
			}
		}
	}
	b.Applied = d.uvarint("applied")
	b.AppliedAt = d.varint("applied at")
	if err := d.finish(); err != nil {
		*b = Batch{}
		return err
	}
	return nil
}

// UnmarshalBinary decodes a Command frame into c (replacing its contents).
func (c *Command) UnmarshalBinary(data []byte) error {
	d := decoder{buf: data, what: "command"}
	*c = Command{}
	d.version(d.header(TagCommand))
	k := CommandKind(d.byte1("kind"))
	if d.err == nil && !validCommandKind(k) {
		d.off--
		d.failf("unknown command kind %d", k)
	}
	c.Kind = k
	f := d.uvarint("fields")
	if d.err == nil && f&^cfAllFields != 0 {
		d.failf("unknown field bits %#x", f&^cfAllFields)
	}
	if f&cfID != 0 {
		c.ID = d.uvarint("id")
	}
	if f&cfSensor != 0 {
		c.Sensor = d.u16("sensor")
	}
	if f&cfType != 0 {
		c.Type = d.u16("type")
	}
	if f&cfEntity != 0 {
		c.Entity = d.string("entity")
	}
	c.All = f&cfAll != 0
	if f&cfOn != 0 {
		c.On = d.u16("on")
	}
	if f&cfAttr != 0 {
		c.Attr = d.u16("attr")
	}
	if f&cfConds != 0 {
		n := d.count("conds", minCond)
		if d.err == nil && n == 0 {
			d.failf("conds flag set with no conds")
		}
		if n > 0 {
			c.Conds = make([]Cond, n)
			for i := range c.Conds {
				d.ctx, d.idx = "cond", i
				c.Conds[i].Attr = d.u16("attr")
				d.value(&c.Conds[i].Value)
				if d.err != nil {
					break
				}
			}
			d.ctx = ""
		}
	}
	if f&cfPeriod != 0 {
		c.Period = d.varint("period")
	}
	c.While = f&cfWhile != 0
	if f&cfPred != 0 && d.err == nil {
		c.Pred = &Pred{}
		nodes := 0
		d.ctx = "pred node"
		d.pred(c.Pred, 1, &nodes)
		d.ctx = ""
	}
	if f&cfKeep != 0 {
		n := d.count("keep", 1)
		if d.err == nil && n == 0 {
			d.failf("keep flag set with no attributes")
		}
		if n > 0 {
			c.Keep = make([]uint16, n)
			for i := range c.Keep {
				c.Keep[i] = d.u16("keep")
			}
		}
	}
	if f&cfCount != 0 {
		n := d.uvarint("count")
		if d.err == nil && (n == 0 || n > math.MaxUint32) {
			d.failf("count %d out of range", n)
		}
		c.Count = uint32(n)
	}
	if f&cfText != 0 {
		c.Text = d.string("text")
	}
	if f&cfArgs != 0 {
		n := d.count("args", 1)
		if d.err == nil && n == 0 {
			d.failf("args flag set with no args")
		}
		if n > 0 {
			c.Args = make([]string, n)
			for i := range c.Args {
				c.Args[i] = d.string("arg")
			}
		}
	}
	if f&cfLimit != 0 {
		c.Limit = d.varint("limit")
	}
	if err := d.finish(); err != nil {
		*c = Command{}
		return err
	}
	return nil
}
