package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// ---- random messages (canonical: empty slices are nil, as decoding gives) ----

func randString(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		return ""
	case 1:
		return "Process"
	case 2:
		return "é∀\x00\xff" // not UTF-8: strings are bytes
	default:
		var sb strings.Builder
		for n := r.IntN(24); n > 0; n-- {
			sb.WriteByte(byte(' ' + r.IntN(95)))
		}
		return sb.String()
	}
}

func randI64(r *rand.Rand) int64 {
	switch r.IntN(8) {
	case 0:
		return 0
	case 1:
		return math.MinInt64
	case 2:
		return math.MaxInt64
	case 3:
		return -r.Int64N(1 << 20)
	case 4:
		return r.Int64N(1000)
	default:
		return int64(r.Uint64())
	}
}

func randU64(r *rand.Rand) uint64 {
	switch r.IntN(5) {
	case 0:
		return 0
	case 1:
		return math.MaxUint64
	case 2:
		return r.Uint64N(300)
	default:
		return r.Uint64()
	}
}

func randU16(r *rand.Rand) uint16 {
	if r.IntN(4) == 0 {
		return math.MaxUint16
	}
	return uint16(r.IntN(40))
}

func randValue(r *rand.Rand) Value {
	v := Value{Kind: ValueKind(1 + r.IntN(int(VEnum)))}
	switch v.Kind {
	case VString:
		v.S = randString(r)
	case VFloat:
		v.N = math.Float64bits(r.NormFloat64() * 1e6)
	case VBool:
		v.N = uint64(r.IntN(2))
	default:
		v.N = randU64(r)
	}
	if r.IntN(10) == 0 { // off-kind fields round-trip too
		v.N, v.S = randU64(r), randString(r)
	}
	return v
}

func randHello(r *rand.Rand) *Hello {
	h := &Hello{Version: Version, Name: randString(r), SDL: randString(r),
		MonoBase: randI64(r), WallBase: randI64(r), Period: randI64(r)}
	for n := r.IntN(5); n > 0; n-- {
		h.Types = append(h.Types, randString(r))
	}
	for n := r.IntN(8); n > 0; n-- {
		h.Sensors = append(h.Sensors, randString(r))
	}
	for n := r.IntN(3); n > 0; n-- {
		h.Caps = append(h.Caps, randString(r))
	}
	return h
}

func randPacket(r *rand.Rand, ts int64) Packet {
	p := Packet{TS: ts, Sensor: randU16(r), Kind: PacketKind(1 + r.IntN(int(PResultLost)))}
	if p.Kind != PEvent || r.IntN(5) == 0 {
		p.Tuple = randU64(r)
	}
	if r.IntN(2) == 0 {
		p.Begin = ts - r.Int64N(1e9)
	} else if r.IntN(5) == 0 {
		p.Begin = randI64(r)
	}
	for n := r.IntN(5); n > 0; n-- {
		p.Vals = append(p.Vals, randValue(r))
	}
	return p
}

func randBatch(r *rand.Rand, maxPackets int) *Batch {
	b := &Batch{Watermark: randI64(r)}
	for n := r.IntN(4); n > 0; n-- {
		b.Defs = append(b.Defs, EntityDef{Key: randU64(r), Type: randU16(r), ID: randString(r)})
	}
	ts := randI64(r)
	for n := r.IntN(maxPackets + 1); n > 0; n-- {
		if r.IntN(10) == 0 {
			ts = randI64(r) // out of order and extreme deltas still round-trip
		} else {
			ts += r.Int64N(5000)
		}
		b.Packets = append(b.Packets, randPacket(r, ts))
	}
	for n := r.IntN(4); n > 0; n-- {
		b.Counts = append(b.Counts, Count{Sensor: randU16(r), Wanted: randU64(r), Drops: randU64(r)})
	}
	return b
}

func randCommand(r *rand.Rand) *Command {
	c := &Command{Kind: CommandKind(1 + r.IntN(int(CPlan)))}
	if r.IntN(2) == 0 {
		c.ID = randU64(r)
	}
	if r.IntN(2) == 0 {
		c.Sensor = randU16(r)
	}
	if r.IntN(2) == 0 {
		c.Type = randU16(r)
	}
	if r.IntN(2) == 0 {
		c.Entity = randString(r)
	}
	c.All = r.IntN(3) == 0
	if r.IntN(3) == 0 {
		c.On = randU16(r)
		c.Attr = randU16(r)
	}
	for n := r.IntN(3); n > 0; n-- {
		c.Conds = append(c.Conds, Cond{Attr: randU16(r), Value: randValue(r)})
	}
	if r.IntN(2) == 0 {
		c.Period = randI64(r)
	}
	c.While = r.IntN(4) == 0
	if r.IntN(3) == 0 {
		c.Pred = randPred(r, 3)
	}
	for n := r.IntN(3); n > 0; n-- {
		c.Keep = append(c.Keep, randU16(r))
	}
	if r.IntN(3) == 0 {
		c.Count = 1 + uint32(r.IntN(1<<20))
	}
	if r.IntN(4) == 0 {
		c.Text = randString(r)
		for n := r.IntN(3); n > 0; n-- {
			c.Args = append(c.Args, randString(r))
		}
		c.Limit = randI64(r)
	}
	return c
}

func randPred(r *rand.Rand, depth int) *Pred {
	op := PredOp(1 + r.IntN(int(PPrefix)))
	if depth == 0 && op <= PNot {
		op = PEq
	}
	p := &Pred{Op: op}
	switch op {
	case PAnd, POr:
		for n := 1 + r.IntN(2); n > 0; n-- {
			p.Kids = append(p.Kids, *randPred(r, depth-1))
		}
	case PNot:
		p.Kids = []Pred{*randPred(r, depth-1)}
	default:
		p.Attr, p.Value = randU16(r), randValue(r)
	}
	return p
}

// ---- round trips ----

type codec interface {
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}

// roundTrip encodes m, decodes into a fresh value of its type and compares.
func roundTrip(t *testing.T, m codec) []byte {
	t.Helper()
	enc, err := m.MarshalBinary()
	if err != nil {
		t.Fatalf("encode %+v: %v", m, err)
	}
	got := reflect.New(reflect.TypeOf(m).Elem()).Interface().(codec)
	if err := got.UnmarshalBinary(enc); err != nil {
		t.Fatalf("decode %x: %v\nof %+v", enc, err, m)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, m)
	}
	return enc
}

func TestRoundTripTable(t *testing.T) {
	tests := []struct {
		name string
		m    codec
	}{
		{"hello zero", &Hello{Version: Version}},
		{"hello", &Hello{Version: Version, Name: "demo", SDL: "entity Process(pid: int)\n",
			Types: []string{"Process", "Mailbox"}, Sensors: []string{"Process", "Running", "Send"},
			MonoBase: 12345, WallBase: 1_700_000_000_000_000_000, Period: 1e9, Caps: []string{CapTriggers}}},
		{"hello extremes", &Hello{Version: Version, Types: []string{""}, MonoBase: math.MinInt64,
			WallBase: math.MaxInt64, Period: -1}},
		{"batch empty", &Batch{}},
		{"batch watermark only", &Batch{Watermark: 99}},
		{"batch", &Batch{
			Defs: []EntityDef{{Key: 1, Type: 0, ID: "p1"}, {Key: 2, Type: 1, ID: "mbox"}},
			Packets: []Packet{
				{TS: 100, Sensor: 2, Kind: PEvent, Vals: []Value{{Kind: VEntity, N: 1}, {Kind: VInt, N: uint64(1<<64 - 5)}}},
				{TS: 100, Sensor: 3, Kind: PBegin, Tuple: 7, Vals: []Value{{Kind: VEntity, N: 2}}},
				{TS: 150, Sensor: 3, Kind: PEnd, Tuple: 7, Begin: 100, Vals: []Value{{Kind: VEntity, N: 2}}},
				{TS: 160, Sensor: 4, Kind: PWhole, Tuple: 8, Begin: 120, Vals: []Value{
					{Kind: VFloat, N: math.Float64bits(math.NaN())}, {Kind: VFloat, N: math.Float64bits(-0.0)},
					{Kind: VString, S: "hello"}, {Kind: VString}, {Kind: VBool, N: 1}, {Kind: VBool},
					{Kind: VTime, N: uint64(1_700_000_000_000_000_000)}, {Kind: VDuration, N: uint64(math.MaxUint64)},
					{Kind: VEnum, N: 3}}},
				{TS: 170, Sensor: 5, Kind: PSample, Tuple: 9, Begin: -5},
				{TS: 170, Sensor: 0, Kind: PEntityBegin, Tuple: 10, Vals: []Value{{Kind: VEntity, N: 1}}},
				{TS: 180, Sensor: 0, Kind: PEntityEnd, Tuple: 10, Begin: 170},
			},
			Watermark: 200,
			Counts:    []Count{{Sensor: 2, Wanted: 10, Drops: 1}, {Sensor: math.MaxUint16, Wanted: math.MaxUint64}},
		}},
		{"batch extreme times", &Batch{Packets: []Packet{
			{TS: math.MinInt64, Kind: PEvent}, {TS: math.MaxInt64, Kind: PEnd, Begin: math.MinInt64},
			{TS: math.MinInt64, Kind: PWhole, Begin: math.MaxInt64, Tuple: math.MaxUint64}},
			Watermark: math.MaxInt64}},
		{"command lease", &Command{Kind: CLease, Period: 5e9}},
		{"command bye", &Command{Kind: CBye}},
		{"command enable", &Command{Kind: CEnable, Sensor: 3, Type: 1, Entity: "p42"}},
		{"command enable all", &Command{Kind: CEnableAll, Sensor: 3, All: true}},
		{"command trigger", &Command{Kind: CTrigger, ID: 17, Sensor: 4, On: 2, Attr: 1, Conds: []Cond{
			{Attr: 0, Value: Value{Kind: VEntity, S: "p1"}}, {Attr: 2, Value: Value{Kind: VInt, N: uint64(1<<64 - 1)}}}}},
		{"command sample", &Command{Kind: CSample, ID: math.MaxUint64, Sensor: math.MaxUint16, Type: 2,
			Entity: "m", All: true, Period: math.MinInt64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { roundTrip(t, tt.m) })
	}
}

func TestRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		roundTrip(t, randHello(r))
		roundTrip(t, randBatch(r, 40))
		roundTrip(t, randCommand(r))
	}
}

// Decoding replaces whatever the receiver held.
func TestDecodeReplaces(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200; i++ {
		want := randBatch(r, 10)
		enc, _ := want.MarshalBinary()
		got := randBatch(r, 10)
		if err := got.UnmarshalBinary(enc); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	}
}

// Every proper prefix of a frame is refused, and so is any trailing byte.
func TestDecodeTruncatedAndTrailing(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 200; i++ {
		for _, m := range []codec{randHello(r), randBatch(r, 6), randCommand(r)} {
			enc, err := m.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			fresh := func() codec { return reflect.New(reflect.TypeOf(m).Elem()).Interface().(codec) }
			for n := 0; n < len(enc); n++ {
				if err := fresh().UnmarshalBinary(enc[:n]); err == nil {
					t.Fatalf("%T: prefix %d of %d decoded", m, n, len(enc))
				}
			}
			err = fresh().UnmarshalBinary(append(enc[:len(enc):len(enc)], 0))
			if err == nil || !strings.Contains(err.Error(), "trailing garbage") {
				t.Fatalf("%T: trailing byte: %v", m, err)
			}
		}
	}
}

// Random mutations of valid frames never panic; what decodes re-encodes to
// the same message.
func TestDecodeMutations(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 3000; i++ {
		var m codec
		switch i % 3 {
		case 0:
			m = randHello(r)
		case 1:
			m = randBatch(r, 8)
		default:
			m = randCommand(r)
		}
		enc, _ := m.MarshalBinary()
		for k := 1 + r.IntN(3); k > 0; k-- {
			switch j := r.IntN(len(enc)); r.IntN(3) {
			case 0:
				enc[j] ^= byte(1 << r.IntN(8))
			case 1:
				enc[j] = byte(r.IntN(256))
			default:
				enc = append(enc[:j], enc[j+1:]...)
			}
			if len(enc) == 0 {
				break
			}
		}
		checkReencode(t, reflect.TypeOf(m).Elem(), enc)
	}
}

// checkReencode decodes data as a message of type typ; if that succeeds,
// encoding and decoding again must give the same message.
func checkReencode(t *testing.T, typ reflect.Type, data []byte) {
	t.Helper()
	m := reflect.New(typ).Interface().(codec)
	if err := m.UnmarshalBinary(data); err != nil {
		if err.Error() == "" || !strings.HasPrefix(err.Error(), "wire: ") {
			t.Fatalf("unclear error %q", err)
		}
		return
	}
	enc, err := m.MarshalBinary()
	if err != nil {
		t.Fatalf("decoded %x but re-encoding fails: %v", data, err)
	}
	m2 := reflect.New(typ).Interface().(codec)
	if err := m2.UnmarshalBinary(enc); err != nil {
		t.Fatalf("re-encoding %x does not decode: %v", enc, err)
	}
	if !reflect.DeepEqual(m, m2) {
		t.Fatalf("decode(encode(decode(%x))) differs:\n%+v\n%+v", data, m, m2)
	}
}

func mustEncode(t *testing.T, m codec) []byte {
	t.Helper()
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeErrors(t *testing.T) {
	batch := func(body ...byte) []byte { return append([]byte{TagBatch, Version}, body...) }
	cmd := func(body ...byte) []byte { return append([]byte{TagCommand, Version}, body...) }
	big := make([]byte, MaxFrame+1)
	big[0], big[1] = TagBatch, Version
	tests := []struct {
		name string
		m    codec
		data []byte
		want string
	}{
		{"empty", &Batch{}, nil, "truncated reading tag"},
		{"wrong tag", &Batch{}, mustEncode(t, &Command{Kind: CBye}), `tag 'C', want 'B'`},
		{"hello as batch", &Batch{}, mustEncode(t, &Hello{Version: Version}), `tag 'H', want 'B'`},
		{"batch version", &Batch{}, []byte{TagBatch, Version + 1, 0, 0, 0, 0}, "protocol version 3"},
		{"hello version", &Hello{}, []byte{TagHello, 7}, "protocol version 7"},
		{"hello version overflow", &Hello{}, []byte{TagHello, 0x80, 0x80, 0x80, 0x80, 0x10}, "exceeds 32 bits"},
		{"too large", &Batch{}, big, "frame too large: 4194305 bytes exceed the 4194304-byte limit"},
		{"huge packet count", &Batch{}, batch(0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f), "packets count 4294967295 exceeds"},
		{"huge string", &Hello{}, []byte{TagHello, Version, 0xff, 0xff, 0x03, 'a'}, "name length 65535 exceeds the remaining 1 bytes"},
		{"varint overflow", &Batch{}, batch(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "overflows 64 bits"},
		{"packet kind", &Batch{}, batch(0, 0, 1, 0x0e, 0, 0, 0), "packet 0: at byte 5: unknown packet kind 14"},
		{"packet kind zero", &Batch{}, batch(0, 0, 1, 0x00, 0, 0, 0), "unknown packet kind 0"},
		{"packet reserved", &Batch{}, batch(0, 0, 1, 0x81, 0, 0, 0), "reserved bit"},
		{"sensor range", &Batch{}, batch(0, 0, 1, 0x01, 0x80, 0x80, 0x04, 0, 0), "sensor 65536 exceeds 65535"},
		{"empty vals flag", &Batch{}, batch(0, 0, 1, 0x41, 0, 0, 0, 0), "values flag set with no values"},
		{"value kind", &Batch{}, batch(0, 0, 1, 0x41, 0, 0, 1, 0x09, 0), "unknown value kind 9"},
		{"value reserved", &Batch{}, batch(0, 0, 1, 0x41, 0, 0, 1, 0x22, 0), "reserved bit"},
		{"float truncated", &Batch{}, batch(0, 0, 1, 0x41, 0, 0, 1, 0x43, 1, 2, 3, 0), "truncated reading value"},
		{"def type range", &Batch{}, batch(0, 1, 1, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0), "def type 33554431 exceeds 65535"},
		{"command kind", &Command{}, cmd(14, 0), "unknown command kind 14"},
		{"command kind zero", &Command{}, cmd(0, 0), "unknown command kind 0"},
		{"command fields", &Command{}, cmd(byte(CBye), 0x80, 0x80, 0x04), "unknown field bits 0x10000"},
		{"command count zero", &Command{}, cmd(byte(CTrigger), 0x80, 0x20, 0), "count 0 out of range"},
		{"pred op", &Command{}, cmd(byte(CFragment), 0x80, 0x08, 0x0c), "pred node 1: at byte 5: unknown predicate operator 12"},
		{"pred no operands", &Command{}, cmd(byte(CFragment), 0x80, 0x08, byte(PAnd), 0), "and with no operands"},
		{"empty keep", &Command{}, cmd(byte(CFragment), 0x80, 0x10, 0), "keep flag set with no attributes"},
		{"empty conds", &Command{}, cmd(byte(CTrigger), 0x80, 0x01, 0), "conds flag set with no conds"},
		{"command trailing", &Command{}, cmd(byte(CBye), 0, 0), "1 bytes of trailing garbage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.m.UnmarshalBinary(tt.data)
			if err == nil {
				t.Fatalf("decoded %+v", tt.m)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
	var ve *VersionError
	if err := new(Hello).UnmarshalBinary([]byte{TagHello, 9, 0}); !errors.As(err, &ve) || ve.Got != 9 {
		t.Fatalf("version error: %v", err)
	}
	var h Hello
	_ = h.UnmarshalBinary([]byte{TagHello, 9})
	if h.Version != 9 {
		t.Fatalf("Hello.Version after a version error: %d", h.Version)
	}
	if err := new(Batch).UnmarshalBinary(big); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversize: %v", err)
	}
}

// TestPredBounds: a predicate of MaxPredNodes nodes, MaxPredDepth deep,
// round-trips; one node more or one level deeper is refused by both the
// encoder and the decoder (which meets it as bytes a remote could send).
func TestPredBounds(t *testing.T) {
	leaf := Pred{Op: PEq, Attr: 1, Value: Value{Kind: VInt, N: 7}}
	deep := func(d int) *Pred {
		p := leaf
		for range d - 1 {
			p = Pred{Op: PNot, Kids: []Pred{p}}
		}
		return &p
	}
	wide := func(n int) *Pred { return &Pred{Op: POr, Kids: slices.Repeat([]Pred{leaf}, n-1)} }
	frame := func(p *Pred) []byte {
		b := append([]byte{TagCommand, Version, byte(CFragment)}, 0x80, 0x08)
		nodes := 0
		b, err := appendPredUnchecked(b, p, &nodes)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tt := range []struct {
		name string
		p    *Pred
		want string
	}{
		{"depth", deep(MaxPredDepth), ""},
		{"too deep", deep(MaxPredDepth + 1), "nested more than 32 deep"},
		{"nodes", wide(MaxPredNodes), ""},
		{"too many nodes", wide(MaxPredNodes + 1), "more than 256"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &Command{Kind: CFragment, Pred: tt.p}
			_, eerr := c.MarshalBinary()
			var d Command
			derr := d.UnmarshalBinary(frame(tt.p))
			if tt.want == "" {
				if eerr != nil || derr != nil {
					t.Fatalf("at the bound: encode %v, decode %v", eerr, derr)
				}
				if !reflect.DeepEqual(d.Pred, tt.p) {
					t.Fatal("round trip differs")
				}
				return
			}
			if eerr == nil || !strings.Contains(eerr.Error(), tt.want) {
				t.Fatalf("encode: %v, want %q", eerr, tt.want)
			}
			if derr == nil || !strings.Contains(derr.Error(), tt.want) {
				t.Fatalf("decode: %v, want %q", derr, tt.want)
			}
		})
	}
}

// appendPredUnchecked encodes p with no bounds, as a hostile remote would.
func appendPredUnchecked(b []byte, p *Pred, nodes *int) ([]byte, error) {
	b = append(b, byte(p.Op))
	switch p.Op {
	case PAnd, POr:
		b = binary.AppendUvarint(b, uint64(len(p.Kids)))
	case PNot:
	default:
		b = binary.AppendUvarint(b, uint64(p.Attr))
		return appendValue(b, &p.Value)
	}
	for i := range p.Kids {
		var err error
		if b, err = appendPredUnchecked(b, &p.Kids[i], nodes); err != nil {
			return b, err
		}
	}
	return b, nil
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name string
		m    codec
		want string
	}{
		{"packet kind", &Batch{Packets: []Packet{{Kind: 0}}}, "packet 0: unknown packet kind 0"},
		{"value kind", &Batch{Packets: []Packet{{Kind: PEvent, Vals: []Value{{Kind: 99}}}}}, "packet 0: value 0: unknown value kind 99"},
		{"command kind", &Command{Kind: 0}, "unknown command kind 0"},
		{"cond kind", &Command{Kind: CTrigger, Conds: []Cond{{Value: Value{Kind: 0}}}}, "cond 0: unknown value kind 0"},
		{"batch too large", &Batch{Defs: []EntityDef{{ID: strings.Repeat("x", MaxFrame)}}}, "frame too large"},
		{"hello too large", &Hello{SDL: strings.Repeat("x", MaxFrame)}, "frame too large"},
		{"command too large", &Command{Kind: CEnable, Entity: strings.Repeat("x", MaxFrame)}, "frame too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.m.MarshalBinary()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
	// AppendBinary leaves dst as it was on error.
	dst := []byte("keep")
	out, err := (&Batch{Packets: []Packet{{Kind: 0}}}).AppendBinary(dst)
	if err == nil || !bytes.Equal(out, []byte("keep")) {
		t.Fatalf("AppendBinary on error: %q, %v", out, err)
	}
}

// AppendBinary appends after what dst holds.
func TestAppendBinary(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	b := randBatch(r, 20)
	whole, _ := b.MarshalBinary()
	out, err := b.AppendBinary([]byte("prefix"))
	if err != nil || !bytes.Equal(out, append([]byte("prefix"), whole...)) {
		t.Fatalf("AppendBinary: %v", err)
	}
}

// A batch of typical packets stays small: a few bytes of time per packet.
func TestCompact(t *testing.T) {
	b := benchBatch(1000)
	enc, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	per := float64(len(enc)) / float64(len(b.Packets))
	t.Logf("1000-packet batch: %d bytes, %.1f bytes/packet", len(enc), per)
	if per > 16 {
		t.Fatalf("%.1f bytes per packet; want ≤ 16", per)
	}
}

// ---- splitting ----

func TestEncodeSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 500; i++ {
		b := randBatch(r, 60)
		if r.IntN(3) == 0 { // many packets at equal timestamps
			for j := range b.Packets {
				b.Packets[j].TS = b.Watermark - 3
			}
		}
		whole, _ := b.MarshalBinary()
		limit := 48 + r.IntN(len(whole)+1)
		frames, err := b.EncodeSplit(limit)
		if errors.Is(err, ErrFrameTooLarge) {
			continue // some element alone exceeds limit
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(whole) <= limit && (len(frames) != 1 || !bytes.Equal(frames[0], whole)) {
			t.Fatalf("fitting batch split into %d frames", len(frames))
		}
		var got Batch
		var wms []int64
		for k, f := range frames {
			if len(f) > limit {
				t.Fatalf("frame %d: %d bytes > limit %d", k, len(f), limit)
			}
			var part Batch
			if err := part.UnmarshalBinary(f); err != nil {
				t.Fatal(err)
			}
			if len(got.Packets) > 0 && len(part.Defs) > 0 {
				t.Fatalf("frame %d: defs after packets", k)
			}
			if len(part.Packets) > 0 && len(got.Counts) > 0 {
				t.Fatalf("frame %d: packets after counts", k)
			}
			got.Defs = append(got.Defs, part.Defs...)
			got.Packets = append(got.Packets, part.Packets...)
			got.Counts = append(got.Counts, part.Counts...)
			wms = append(wms, part.Watermark)
		}
		got.Watermark = wms[len(wms)-1]
		if !reflect.DeepEqual(&got, b) {
			t.Fatalf("split batch differs:\n got %+v\nwant %+v", got, b)
		}
		// Watermarks never go down, never pass b's, and each promises only
		// what holds: later frames' packets are after it.
		n := 0
		for k, f := range frames {
			var part Batch
			_ = part.UnmarshalBinary(f)
			n += len(part.Packets)
			if k > 0 && wms[k] < wms[k-1] || wms[k] > b.Watermark {
				t.Fatalf("watermarks %v (batch %d)", wms, b.Watermark)
			}
			for _, p := range b.Packets[n:] {
				if p.TS <= wms[k] && wms[k] != b.Watermark && sorted(b.Packets) {
					t.Fatalf("frame %d watermark %d but a later packet at %d", k, wms[k], p.TS)
				}
			}
		}
	}
}

func sorted(ps []Packet) bool {
	for i := 1; i < len(ps); i++ {
		if ps[i].TS < ps[i-1].TS {
			return false
		}
	}
	return true
}

func TestEncodeSplitTooLarge(t *testing.T) {
	b := &Batch{Packets: []Packet{{Kind: PEvent, Vals: []Value{{Kind: VString, S: strings.Repeat("x", 100)}}}}}
	if _, err := b.EncodeSplit(50); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("got %v", err)
	}
	if frames, err := b.EncodeSplit(0); err != nil || len(frames) != 1 {
		t.Fatalf("limit 0 (MaxFrame): %d frames, %v", len(frames), err)
	}
}

// ---- benchmarks ----

// benchBatch is a batch of n typical packets: a few sensors, microsecond
// spacing, entity and integer attributes, some intervals and strings.
func benchBatch(n int) *Batch {
	r := rand.New(rand.NewPCG(42, 42))
	b := &Batch{Defs: []EntityDef{{Key: 1, Type: 0, ID: "p1"}, {Key: 2, Type: 0, ID: "p2"}, {Key: 3, Type: 1, ID: "mbox-a"}}}
	ts := int64(8_000_000_000_000)
	tuple := uint64(5000)
	for i := 0; i < n; i++ {
		ts += 200 + r.Int64N(2000)
		p := Packet{TS: ts, Sensor: uint16(1 + r.IntN(6))}
		switch r.IntN(4) {
		case 0, 1:
			p.Kind = PEvent
			p.Vals = []Value{{Kind: VEntity, N: uint64(1 + r.IntN(3))}, {Kind: VInt, N: uint64(r.IntN(100000))}}
		case 2:
			tuple++
			p.Kind, p.Tuple = PBegin, tuple
			p.Vals = []Value{{Kind: VEntity, N: uint64(1 + r.IntN(3))}}
		default:
			p.Kind, p.Tuple, p.Begin = PEnd, tuple, ts-r.Int64N(50000)
			p.Vals = []Value{{Kind: VEntity, N: uint64(1 + r.IntN(3))}, {Kind: VString, S: "msg"}}
		}
		b.Packets = append(b.Packets, p)
	}
	b.Watermark = ts + 1
	b.Counts = []Count{{Sensor: 1, Wanted: 1000, Drops: 2}, {Sensor: 2, Wanted: 900}}
	return b
}

func BenchmarkEncodeBatch1000(b *testing.B) {
	batch := benchBatch(1000)
	buf, _ := batch.MarshalBinary()
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = batch.AppendBinary(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(batch.Packets))*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
}

func BenchmarkMarshalBatch1000(b *testing.B) {
	batch := benchBatch(1000)
	buf, _ := batch.MarshalBinary()
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := batch.MarshalBinary(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(batch.Packets))*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
}

func BenchmarkDecodeBatch1000(b *testing.B) {
	batch := benchBatch(1000)
	buf, _ := batch.MarshalBinary()
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		var got Batch
		if err := got.UnmarshalBinary(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(batch.Packets))*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
}
