package wire

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The fuzz targets decode arbitrary input: decoding never panics, errors
// are clear, and whatever decodes re-encodes to a frame that decodes to the
// same message. Seed corpora live in testdata/fuzz/<Name>/; regenerate them
// with TQMON_WRITE_SEEDS=1 go test -run TestWriteSeedCorpus ./resident/wire.

// maxFuzzFrame is the longest frame the fuzz targets decode; longer ones
// are skipped. Go's fuzzer minimizes every input that finds new coverage,
// in time quadratic in its length, and fuzzes nothing meanwhile; a frame of
// every message kind, with a few of each of its parts, fits (every seed
// does).
const maxFuzzFrame = 256

func FuzzDecodeBatch(f *testing.F) { fuzzDecode[Batch](f, batchSeeds()) }

func FuzzDecodeCommand(f *testing.F) { fuzzDecode[Command](f, commandSeeds()) }

func FuzzDecodeHello(f *testing.F) { fuzzDecode[Hello](f, helloSeeds()) }

func fuzzDecode[T any, M codec](f *testing.F, seeds []M) {
	for _, s := range seedFrames(seeds) {
		if len(s) > maxFuzzFrame {
			f.Fatalf("a %d-byte seed: seeds must fit in maxFuzzFrame", len(s))
		}
		f.Add(s)
	}
	typ := reflect.TypeFor[T]()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) <= maxFuzzFrame {
			checkReencode(t, typ, data)
		}
	})
}

func seedFrames[M codec](ms []M) [][]byte {
	var out [][]byte
	for _, m := range ms {
		b, err := m.MarshalBinary()
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	return out
}

func batchSeeds() []*Batch {
	r := rand.New(rand.NewPCG(100, 1))
	ms := []*Batch{{}, {Watermark: 1}, benchBatch(3)}
	for len(ms) < 10 {
		ms = append(ms, randBatch(r, 2))
	}
	return ms
}

func commandSeeds() []*Command {
	r := rand.New(rand.NewPCG(100, 2))
	ms := []*Command{{Kind: CBye}, {Kind: CLease, Period: 5e9},
		{Kind: CTrigger, ID: 3, Sensor: 2, On: 1, Attr: 1, Conds: []Cond{{Attr: 0, Value: Value{Kind: VEntity, S: "p1"}}}},
		{Kind: CTrigger, ID: 6, Sensor: 5, On: 3, Attr: 1, Count: 4, Period: 10e9},
		{Kind: CTrigger, ID: 4, Sensor: 2, On: 3, While: true, Conds: []Cond{{Attr: 1, Value: Value{Kind: VEnum, N: 1}}}},
		{Kind: CFragment, ID: 5, Sensor: 2, Keep: []uint16{0, 1}, Pred: &Pred{Op: POr, Kids: []Pred{
			{Op: PEq, Attr: 1, Value: Value{Kind: VEntity, S: "M3"}},
			{Op: PNot, Kids: []Pred{{Op: PPrefix, Attr: 1, Value: Value{Kind: VEntity, S: "M"}}}}}}},
		{Kind: CPlan, Text: "range of s is S retrieve (s.A)", Args: []string{"target=P1"}, Limit: 1 << 20}}
	for len(ms) < 10 {
		ms = append(ms, randCommand(r))
	}
	return ms
}

func helloSeeds() []*Hello {
	r := rand.New(rand.NewPCG(100, 3))
	ms := []*Hello{{Version: Version}, {Version: Version, Name: "demo", Types: []string{"Process"}, Sensors: []string{"Process", "Send"}, Period: 1e9}}
	for len(ms) < 10 {
		ms = append(ms, randHello(r))
	}
	return ms
}

// TestWriteSeedCorpus writes the fuzz seed corpora (Go corpus format) when
// TQMON_WRITE_SEEDS is set.
func TestWriteSeedCorpus(t *testing.T) {
	if os.Getenv("TQMON_WRITE_SEEDS") == "" {
		t.Skip("set TQMON_WRITE_SEEDS=1 to rewrite testdata/fuzz seeds")
	}
	write := func(name string, frames [][]byte) {
		dir := filepath.Join("testdata", "fuzz", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, b := range frames {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%02d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("FuzzDecodeBatch", seedFrames(batchSeeds()))
	write("FuzzDecodeCommand", seedFrames(commandSeeds()))
	write("FuzzDecodeHello", seedFrames(helloSeeds()))
}
