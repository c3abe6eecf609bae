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

func FuzzDecodeBatch(f *testing.F) {
	for _, s := range seedFrames(batchSeeds()) {
		f.Add(s)
	}
	typ := reflect.TypeFor[Batch]()
	f.Fuzz(func(t *testing.T, data []byte) { checkReencode(t, typ, data) })
}

func FuzzDecodeCommand(f *testing.F) {
	for _, s := range seedFrames(commandSeeds()) {
		f.Add(s)
	}
	typ := reflect.TypeFor[Command]()
	f.Fuzz(func(t *testing.T, data []byte) { checkReencode(t, typ, data) })
}

func FuzzDecodeHello(f *testing.F) {
	for _, s := range seedFrames(helloSeeds()) {
		f.Add(s)
	}
	typ := reflect.TypeFor[Hello]()
	f.Fuzz(func(t *testing.T, data []byte) { checkReencode(t, typ, data) })
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
		ms = append(ms, randBatch(r, 5))
	}
	return ms
}

func commandSeeds() []*Command {
	r := rand.New(rand.NewPCG(100, 2))
	ms := []*Command{{Kind: CBye}, {Kind: CLease, Period: 5e9},
		{Kind: CTrigger, ID: 3, Sensor: 2, On: 1, Attr: 1, Conds: []Cond{{Attr: 0, Value: Value{Kind: VEntity, S: "p1"}}}}}
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
