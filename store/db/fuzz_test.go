package db

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tqmon/tqmon/algebra"
)

// fuzzSchema has an attribute of every kind.
var fuzzSchema = &schema{
	kinds: []algebra.Kind{algebra.KindEntity, algebra.KindEnum, algebra.KindInt, algebra.KindFloat,
		algebra.KindString, algebra.KindBool, algebra.KindTime, algebra.KindDuration},
	enums: [][]string{nil, {"Ready", "Running", "Waiting"}, nil, nil, nil, nil, nil, nil},
}

func fuzzVals(i int) []algebra.Value {
	return []algebra.Value{
		algebra.Entity(fmt.Sprintf("P%d", i%3)), algebra.Enum([]string{"Ready", "Running", "Waiting"}[i%3], i%3),
		algebra.Int(int64(i*7 - 20)), algebra.Float(float64(i) / 4), algebra.Str(fmt.Sprint("s", i%2)),
		algebra.Bool(i%2 == 0), algebra.TimeVal(int64(i) << 40), algebra.DurationVal(int64(-i)),
	}
}

func fuzzBlockSeeds() [][]byte {
	var seeds [][]byte
	var elems []elem
	t := int64(-5)
	for i := 0; i < 3; i++ {
		elems = append(elems, elem{kind: kBegin, t: t, id: uint64(i), vals: fuzzVals(i)})
		if i%2 == 1 {
			elems = append(elems, elem{kind: kEnd, t: t + 1, id: uint64(i - 1)})
		}
		elems = append(elems, elem{kind: kEvent, t: t + 2, vals: fuzzVals(i + 1)})
		t += 3
	}
	seeds = append(seeds, encodeBlock(3, fuzzSchema, elems))
	seeds = append(seeds, encodeBlock(3, fuzzSchema, elems[:1]))
	seeds = append(seeds, encodeBlock(3, fuzzSchema, []elem{{kind: kBegin, t: algebra.Beginning, id: 9, vals: fuzzVals(2)},
		{kind: kEnd, t: algebra.Forever - 1, id: 9}}))
	return seeds
}

func fuzzRecordSeeds() [][]byte {
	st := relState{nextID: 7, nextSeq: 3, frontier: -4, extOK: true, extStart: -9, extEnd: 40, floorOK: true, floor: 12, tuples: 5, elements: 9, blocks: 2}
	return [][]byte{
		encodeCheckpoint(3, fuzzSchema, 100, []openTuple{{id: 2, from: 50, vals: fuzzVals(1)}, {id: 9, from: algebra.Beginning, vals: fuzzVals(4)}}),
		encodeEnds(3, 2, []endEntry{{id: 2<<EndsBucketBits + 5, to: 70}, {id: 2<<EndsBucketBits + 1, to: -3}}),
		encodeState(&st),
		encodeRelation(3, "Process", "entity relation Process(Process: Process)"),
		encodeSpec("os.sdl", "entity type P\nentity relation P(P: P)\n"),
		encodeWindow(algebra.Window{From: -1, To: 1e9}),
		encodeFormat(),
	}
}

// TestWriteFuzzSeeds keeps testdata/fuzz in step with the encoders:
// go test ./store/db -run WriteFuzzSeeds -seeds rewrites them.
func TestWriteFuzzSeeds(t *testing.T) {
	for name, seeds := range map[string][][]byte{"FuzzDecodeBlock": fuzzBlockSeeds(), "FuzzDecodeRecord": fuzzRecordSeeds()} {
		dir := filepath.Join("testdata", "fuzz", name)
		for i, s := range seeds {
			path := filepath.Join(dir, fmt.Sprintf("seed%02d", i))
			want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
			if os.Getenv("TQMON_WRITE_SEEDS") != "" {
				os.MkdirAll(dir, 0o755)
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != want {
				t.Errorf("%s is stale or missing: TQMON_WRITE_SEEDS=1 go test ./store/db -run WriteFuzzSeeds", path)
			}
		}
	}
}

// maxFuzzInput is the longest input the fuzz targets decode; longer ones
// are skipped. Go's fuzzer minimizes every input that finds new coverage,
// in time quadratic in its length, and fuzzes nothing meanwhile; a block
// with an element of every kind, and every other record, fits (every seed
// does).
const maxFuzzInput = 256

// addSeeds adds seeds to f's corpus; each must fit in maxFuzzInput.
func addSeeds(f *testing.F, seeds [][]byte) {
	for _, s := range seeds {
		if len(s) > maxFuzzInput {
			f.Fatalf("a %d-byte seed: seeds must fit in maxFuzzInput", len(s))
		}
		f.Add(s)
	}
}

// FuzzDecodeBlock: any bytes decode to a block or an error, never a
// panic; a block that decodes re-encodes to the same elements.
func FuzzDecodeBlock(f *testing.F) {
	addSeeds(f, fuzzBlockSeeds())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		fuzzBlock(t, data)
		// Past the checksum too: the same bytes with a right one.
		if len(data) > 4 {
			fuzzBlock(t, appendCRC(append([]byte(nil), data[:len(data)-4]...)))
		}
	})
}

func fuzzBlock(t *testing.T, data []byte) {
	{
		elems, first, err := decodeBlock(data, 3, fuzzSchema)
		if err != nil {
			return
		}
		if len(elems) > 0 && elems[0].t != first {
			t.Fatalf("first element at %d, block at %d", elems[0].t, first)
		}
		for i := 1; i < len(elems); i++ {
			if elems[i].t < elems[i-1].t {
				t.Fatalf("elements out of order")
			}
		}
		if len(elems) == 0 {
			return
		}
		again, _, err := decodeBlock(encodeBlock(3, fuzzSchema, elems), 3, fuzzSchema)
		if err != nil {
			t.Fatalf("re-encoded block does not decode: %v", err)
		}
		if !reflect.DeepEqual(normal(elems), normal(again)) {
			t.Fatalf("re-encoded block differs:\n%v\n%v", elems, again)
		}
	}
}

// normal makes decoded elements comparable (floats by their bits).
func normal(es []elem) string { return fmt.Sprintf("%+v", es) }

// FuzzDecodeRecord: every other record decoder takes any bytes without
// panicking, and what decodes re-encodes to the same thing.
func FuzzDecodeRecord(f *testing.F) {
	addSeeds(f, fuzzRecordSeeds())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		fuzzRecord(t, data)
		if len(data) > 4 {
			fuzzRecord(t, appendCRC(append([]byte(nil), data[:len(data)-4]...)))
		}
	})
}

func fuzzRecord(t *testing.T, data []byte) {
	{
		if at, tuples, err := decodeCheckpoint(data, 3, fuzzSchema); err == nil {
			at2, tuples2, err := decodeCheckpoint(encodeCheckpoint(3, fuzzSchema, at, tuples), 3, fuzzSchema)
			if err != nil || at2 != at || fmt.Sprint(tuples2) != fmt.Sprint(tuples) {
				t.Fatalf("checkpoint round trip: %v", err)
			}
		}
		if b, ends, err := decodeEnds(data, 3); err == nil {
			b2, ends2, err := decodeEnds(encodeEnds(3, b, ends), 3)
			if err != nil || b2 != b || fmt.Sprint(ends2) != fmt.Sprint(ends) {
				t.Fatalf("ends round trip: %v", err)
			}
		}
		if st, err := decodeState(data); err == nil {
			st2, err := decodeState(encodeState(&st))
			if err != nil || st2 != st {
				t.Fatalf("state round trip: %v", err)
			}
		}
		if id, name, sig, err := decodeRelation(data); err == nil {
			id2, name2, sig2, err := decodeRelation(encodeRelation(id, name, sig))
			if err != nil || id2 != id || name2 != name || sig2 != sig {
				t.Fatalf("relation round trip: %v", err)
			}
		}
		if name, text, err := decodeSpec(data); err == nil {
			if n2, t2, err := decodeSpec(encodeSpec(name, text)); err != nil || n2 != name || t2 != text {
				t.Fatalf("spec round trip: %v", err)
			}
		}
		if w, err := decodeWindow(data); err == nil {
			if w2, err := decodeWindow(encodeWindow(w)); err != nil || w2 != w {
				t.Fatalf("window round trip: %v", err)
			}
		}
		decodeFormat(data)
	}
}
