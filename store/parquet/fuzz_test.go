package parquet

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/store/db"
)

// recorded writes the workload's first n calls (all: n < 0) into dir
// with opts, and opens the recording.
func recorded(t testing.TB, dir string, opts Options, n int) *Store {
	w, err := Create(dir, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	calls := workload(w.Catalog())
	if n >= 0 {
		calls = calls[:n]
	}
	feed(t, sinkOf(w), w.At, calls, 0, len(calls))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.files) == 0 {
		t.Fatal("no files")
	}
	return s
}

// tinyRecording is a recording of twelve calls: a Process file and a
// SendMessage file, about 1 KB each.
func tinyRecording(t testing.TB, dir string) *Store {
	return recorded(t, dir, Options{Host: "h", Every: 10 * time.Minute}, 12)
}

// damage writes data as the recording's file f, with the manifest's sum
// of the new bytes when matching (a file crafted to match its sum, or a
// writer's bug) and of the old ones otherwise, and reads f's relation
// through a scan as a query does.
func damage(t testing.TB, s *Store, f file, data []byte, matching bool) error {
	if err := os.WriteFile(f.path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rp, _ := filepath.Rel(s.dir, f.path)
	key := filepath.ToSlash(rp)
	old := s.man.Sums[key]
	if matching {
		s.man.Sums[key] = crc32.Checksum(data, castagnoli)
		defer func() { s.man.Sums[key] = old }()
	}
	_, err := s.NewScan([]db.Read{{Rel: f.rel}})
	return err
}

// maxEdits bounds a FuzzOpenDamaged edit script (see edit).
const maxEdits = 16

// edit applies an edit script to a copy of data: 4-byte steps (op, a,
// b, c) at offset a+256b (mod the length): op%5 is 0: xor the byte with
// c; 1: set it to c; 2: write 2^(c%33)-1 there as a little-endian
// uint32 (Parquet's footer length); 3: as a uvarint (thrift's sizes and
// counts, RLE and delta headers); 4: cut the file there.
func edit(data, script []byte) []byte {
	out := bytes.Clone(data)
	for i := 0; i+4 <= len(script) && i < 4*maxEdits && len(out) > 0; i += 4 {
		op, off, c := script[i], (int(script[i+1])|int(script[i+2])<<8)%len(out), script[i+3]
		v := uint64(1)<<(c%33) - 1
		switch op % 5 {
		case 0:
			out[off] ^= c
		case 1:
			out[off] = c
		case 2:
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], uint32(v))
			copy(out[off:], b[:])
		case 3:
			copy(out[off:], binary.AppendUvarint(nil, uint64(1)<<(c%64)-1))
		case 4:
			out = out[:off]
		}
	}
	return out
}

// FuzzOpenDamaged reads a recording's file damaged by an edit script
// (edit), as a query reads it once its bytes are read (readBytes), the
// manifest's sum either the damaged file's
// (matching: a file crafted to match its sum, or a writer's bug; the
// bytes reach parquet-go, behind checkFile's bounds) or the undamaged
// file's. A read must end, without crashing, in the rows or an error;
// bytes that do not match the sum are refused as damaged, naming the
// file. A read that takes 10 s (well under 1 ms is usual) is taken as a
// hang: the worker dies with every goroutine's stack, and the fuzzing
// engine keeps the input.
//
// The fuzzer mutates a short edit script, not the file's bytes: the
// engine minimizes each input that finds new coverage, trying to drop
// every span of its bytes, for up to a minute (-fuzzminimizetime); over a
// file's 1 KB that took the whole run (the earlier target's stall at 0
// execs/s), over at most 64 bytes it takes milliseconds.
func FuzzOpenDamaged(f *testing.F) {
	s := tinyRecording(f, f.TempDir())
	orig := make([][]byte, len(s.files))
	for i, fl := range s.files {
		data, err := os.ReadFile(fl.path)
		if err != nil {
			f.Fatal(err)
		}
		orig[i] = data
		f.Add(uint8(i), true, []byte{})
		f.Add(uint8(i), false, []byte{0, 0, 2, 0x40})
	}
	f.Fuzz(func(t *testing.T, which uint8, matching bool, script []byte) {
		i := int(which) % len(s.files)
		fl, data := s.files[i], edit(orig[i], script)
		sum := crc32.Checksum(orig[i], castagnoli)
		if matching {
			sum = crc32.Checksum(data, castagnoli)
		}
		hang := time.AfterFunc(10*time.Second, func() {
			buf := make([]byte, 1<<20)
			panic(fmt.Sprintf("reading %s, edited by %x, did not end in 10 s:\n%s", fl.path, script, buf[:runtime.Stack(buf, true)]))
		})
		_, err := readBytes(fl.path, data, sum, s.cat.Lookup(fl.rel), func(row) {})
		hang.Stop()
		switch same := bytes.Equal(data, orig[i]); {
		case same && err != nil:
			t.Fatalf("the undamaged file: %v", err)
		case !same && !matching && (err == nil || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), fl.path)):
			t.Fatalf("a file not matching its sum read as %v", err)
		}
	})
}

// TestCraftedFileBounded: files that match their sums but declare sizes
// parquet-go would allocate at their word are refused as damaged, before
// it does, allocating little: a footer length of 3.8 GB (found by
// FuzzOpenDamaged; parquet-go made a buffer of it, taking seconds and GBs
// each time: the fuzzer's stall at 0 execs/s), and a footer whose first
// thrift list declares 2^31-1 schema elements (parquet-go made a slice of
// them: "fatal error: runtime: out of memory", which no recover catches).
func TestCraftedFileBounded(t *testing.T) {
	s := tinyRecording(t, t.TempDir())
	fl := s.files[0]
	good, err := os.ReadFile(fl.path)
	if err != nil {
		t.Fatal(err)
	}
	bigFooter := bytes.Clone(good)
	binary.LittleEndian.PutUint32(bigFooter[len(bigFooter)-8:], 0xe2e2e2e2)

	footer := []byte{0x15, 0x04, 0x19, 0xfc} // version 2; schema: a list of structs, its size next
	footer = binary.AppendUvarint(footer, 1<<31-1)
	footer = append(footer, make([]byte, 64)...)
	bigList := append([]byte("PAR1"), footer...)
	bigList = binary.LittleEndian.AppendUint32(bigList, uint32(len(footer)))
	bigList = append(bigList, "PAR1"...)

	for name, data := range map[string][]byte{"footer length": bigFooter, "list size": bigList} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := damage(t, s, fl, data, true)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), fl.path) {
			t.Errorf("%s: read as %v; want an error naming the file damaged", name, err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
			t.Errorf("%s: allocated %d MB refusing it", name, n>>20)
		}
	}
}
