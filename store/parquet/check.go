package parquet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/klauspost/compress/zstd"
	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// The bounds a file must keep before parquet-go decodes any of it. The
// checksum in the manifest refuses a damaged file; these refuse a file
// that matches its sum but was crafted (or written by a broken writer) so
// that parquet-go would allocate without bound or not stop: it takes the
// sizes and counts a file declares at their word, and makes buffers of
// them (a 4-byte footer length of 4 GiB, a thrift list of 2^31 entries, a
// zstd frame declaring 60 GiB, a run of 2^31 repeated levels, a delta
// header of 2^31 values). Each bound is far above what tqmon's writer
// makes (one row group a file, pages of at most parquet-go's 256 KiB
// page buffer, at most 1M rows a file, a few dozen columns).
const (
	// maxFooter bounds the footer (the file's thrift metadata).
	maxFooter = 1 << 20
	// maxListEntries bounds the entries of all the footer's thrift lists
	// together (row groups, columns, schema elements, encodings, …), so
	// that decoding the footer makes at most that many structs.
	maxListEntries = 1 << 16
	// maxPageBytes bounds a page's size, uncompressed.
	maxPageBytes = 64 << 20
	// maxPageValues bounds the values a page declares, and every count
	// inside it (levels, delta headers, runs).
	maxPageValues = 1 << 22
	// maxDepth bounds the nesting of thrift structs and lists.
	maxDepth = 32
)

var errBound = errors.New("outside the bounds tqmon reads")

// checkFile checks the Parquet file data against the bounds above, before
// any decoding by parquet-go: first its footer's framing (so that opening
// it allocates at most maxFooter bytes and maxListEntries structs), then,
// opened, each column chunk's pages: each lies inside its chunk, declares
// at most maxPageBytes and maxPageValues, is a version-2 data page (what
// tqmon writes) of a codec and value encoding tqmon writes (zstd or
// none; PLAIN, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY) whose every
// count (its levels' runs, its delta header) is checked here against the
// page's values, and its zstd data decodes to
// at most its declared size (decoded here under that bound). It returns
// the opened file.
//
// What this does not guarantee: that parquet-go's decoders stop and do
// not panic on every input within the bounds (a panic is recovered by
// decodeFile; FuzzOpenDamaged has found no hang within them).
func checkFile(data []byte) (*pq.File, error) {
	size := len(data)
	if size < 12 || string(data[:4]) != "PAR1" || string(data[size-4:]) != "PAR1" {
		return nil, errors.New("not a Parquet file (no PAR1 magic)")
	}
	footer := int(binary.LittleEndian.Uint32(data[size-8:]))
	if footer > size-12 || footer > maxFooter {
		return nil, fmt.Errorf("its footer of %d bytes: %w (a file of %d bytes, at most %d)", footer, errBound, size, maxFooter)
	}
	t := thriftWalk{b: data[size-8-footer : size-8], lists: maxListEntries}
	if err := t.structure(0, nil); err != nil {
		return nil, fmt.Errorf("its footer: %w", err)
	}
	pf, err := pq.OpenFile(bytes.NewReader(data), int64(size), pq.SkipPageIndex(true), pq.SkipBloomFilters(true))
	if err != nil {
		return nil, err
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxPageBytes))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	body := size - 8 - footer
	for g, rg := range pf.Metadata().RowGroups {
		for c, cc := range rg.Columns {
			m := &cc.MetaData
			where := fmt.Sprintf("row group %d, column %d", g, c)
			start := m.DataPageOffset
			if m.DictionaryPageOffset != 0 {
				start = m.DictionaryPageOffset
			}
			if cc.FilePath != "" || start < 4 || m.TotalCompressedSize < 0 || start > int64(body) || m.TotalCompressedSize > int64(body)-start {
				return nil, fmt.Errorf("%s: its pages at %d+%d: %w (the pages end at %d)", where, start, m.TotalCompressedSize, errBound, body)
			}
			if m.Codec != format.Uncompressed && m.Codec != format.Zstd {
				return nil, fmt.Errorf("%s: codec %v: %w (tqmon writes zstd)", where, m.Codec, errBound)
			}
			leaf, ok := pf.Schema().Lookup(m.PathInSchema...)
			if !ok || leaf.MaxRepetitionLevel != 0 || leaf.MaxDefinitionLevel > 1 {
				return nil, fmt.Errorf("%s: column %v: not a column of tqmon's schemas", where, m.PathInSchema)
			}
			pc := pageCheck{dec: dec, zstd: m.Codec == format.Zstd, defWidth: uint(bits.Len(uint(leaf.MaxDefinitionLevel)))}
			if err := pc.pages(data[start : start+m.TotalCompressedSize]); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		}
	}
	return pf, nil
}

// pageCheck checks the pages of one column chunk.
type pageCheck struct {
	dec      *zstd.Decoder
	zstd     bool
	defWidth uint // the bit width of its definition levels
	out      []byte
}

// pageHeader is what the check reads of a page header (parquet.thrift's
// PageHeader, and its DataPageHeaderV2 as field 8).
type pageHeader struct {
	typ, uncompressed, compressed    int64
	values, nulls, rows, encoding    int64
	defBytes, repBytes, isCompressed int64
}

// field records an integer field of a page header by its path of ids.
func (h *pageHeader) field(path []int16, v int64) {
	var at []*int64 // by field id
	switch {
	case len(path) == 1:
		at = []*int64{nil, &h.typ, &h.uncompressed, &h.compressed}
	case len(path) == 2 && path[0] == 8:
		at = []*int64{nil, &h.values, &h.nulls, &h.rows, &h.encoding, &h.defBytes, &h.repBytes, &h.isCompressed}
	default:
		return
	}
	if id := path[len(path)-1]; id > 0 && int(id) < len(at) {
		*at[id] = v
	}
}

// pages checks the pages that make up chunk, one after another to its end
// (as parquet-go reads them: a header, then its compressed bytes).
func (pc *pageCheck) pages(chunk []byte) error {
	for pos := 0; pos < len(chunk); {
		h := pageHeader{isCompressed: 1} // is_compressed defaults to true
		t := thriftWalk{b: chunk[pos:], lists: maxListEntries, ints: h.field}
		if err := t.structure(0, nil); err != nil {
			return fmt.Errorf("page at %d: its header: %w", pos, err)
		}
		typ, unc, comp := h.typ, h.uncompressed, h.compressed
		values, nulls, rows := h.values, h.nulls, h.rows
		defBytes, repBytes := h.defBytes, h.repBytes
		pos += t.i
		bad := func(what string, v any) error {
			return fmt.Errorf("page at %d: %s %v: %w", pos, what, v, errBound)
		}
		switch {
		case typ != int64(format.DataPageV2):
			return bad("page type", format.PageType(typ))
		case comp < 0 || comp > int64(len(chunk)-pos):
			return bad("compressed size", comp)
		case unc < 0 || unc > maxPageBytes:
			return bad("uncompressed size", unc)
		case values < 0 || values > maxPageValues || nulls < 0 || nulls > values || rows < 0 || rows > values:
			return bad("values, nulls, rows", []int64{values, nulls, rows})
		case repBytes != 0 || defBytes < 0 || defBytes > comp || defBytes > unc:
			return bad("level bytes", []int64{repBytes, defBytes})
		}
		page := chunk[pos : pos+int(comp)]
		pos += int(comp)
		if n, err := rleCount(page[:defBytes], pc.defWidth); err != nil || n > values {
			return bad("definition levels", fmt.Sprint(n, err))
		}
		vals := page[defBytes:]
		if pc.zstd && h.isCompressed != 0 {
			out, err := pc.dec.DecodeAll(vals, pc.out[:0])
			if err != nil {
				return bad("zstd data", err)
			}
			pc.out = out
			vals = out
		}
		if int64(len(vals)) > unc-defBytes {
			return bad("values' bytes", len(vals))
		}
		switch enc := format.Encoding(h.encoding); enc {
		case format.Plain:
		case format.DeltaBinaryPacked, format.DeltaLengthByteArray:
			if n, err := deltaCount(vals); err != nil || n > values {
				return bad("delta header's values", fmt.Sprint(n, err))
			}
		default:
			return bad("encoding", enc)
		}
	}
	return nil
}

// rleCount counts the values of an RLE/bit-packed hybrid run sequence of
// the given bit width (parquet-go decodes every run it finds, up to 2^31
// values each).
func rleCount(b []byte, width uint) (int64, error) {
	var n int64
	for i := 0; i < len(b); {
		u, k := binary.Uvarint(b[i:])
		if k <= 0 {
			return n, errors.New("bad run header")
		}
		i += k
		count := int64(u >> 1)
		if u&1 != 0 {
			count *= 8
			i += int((count*int64(width) + 7) / 8)
		} else {
			i += int(width+7) / 8
		}
		if n += count; n > maxPageValues {
			return n, errBound
		}
	}
	return n, nil
}

// deltaCount is the values a DELTA_BINARY_PACKED header declares (a
// DELTA_LENGTH_BYTE_ARRAY begins with one, of its lengths).
func deltaCount(b []byte) (int64, error) {
	var u [3]uint64
	for j := range u {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, errors.New("bad delta header")
		}
		u[j], b = v, b[k:]
	}
	if u[2] > maxPageValues {
		return maxPageValues + 1, nil
	}
	return int64(u[2]), nil
}

// thriftWalk walks a thrift compact-protocol struct without decoding it
// into anything, checking that every list fits in the bytes left (each
// entry takes at least one), that the lists' entries together stay under
// lists, and that nesting stays under maxDepth; ints, when set, is given
// each integer field by its path of field ids.
type thriftWalk struct {
	b     []byte
	i     int
	lists int
	ints  func(path []int16, v int64)
}

var errThrift = errors.New("malformed thrift")

func (t *thriftWalk) byte1() (byte, error) {
	if t.i >= len(t.b) {
		return 0, errThrift
	}
	t.i++
	return t.b[t.i-1], nil
}

func (t *thriftWalk) uvarint() (uint64, error) {
	v, k := binary.Uvarint(t.b[t.i:])
	if k <= 0 {
		return 0, errThrift
	}
	t.i += k
	return v, nil
}

func (t *thriftWalk) structure(depth int, path []int16) error {
	if depth > maxDepth {
		return fmt.Errorf("nested deeper than %d: %w", maxDepth, errBound)
	}
	var id int16
	for {
		b, err := t.byte1()
		if err != nil {
			return err
		}
		if b == 0 {
			return nil
		}
		typ := b & 0xf
		if d := b >> 4; d != 0 {
			id += int16(d)
		} else {
			v, err := t.uvarint()
			if err != nil {
				return err
			}
			id = int16(int64(v>>1) ^ -int64(v&1))
		}
		if err := t.value(typ, depth, append(path, id), true); err != nil {
			return err
		}
	}
}

func (t *thriftWalk) value(typ byte, depth int, path []int16, field bool) error {
	switch typ {
	case 1, 2: // bool: in the field header; one byte in a list
		if !field {
			_, err := t.byte1()
			return err
		}
	case 3: // byte
		_, err := t.byte1()
		return err
	case 4, 5, 6: // i16, i32, i64: zigzag varints
		v, err := t.uvarint()
		if err != nil {
			return err
		}
		if t.ints != nil && field {
			t.ints(path, int64(v>>1)^-int64(v&1))
		}
	case 7: // double
		if len(t.b)-t.i < 8 {
			return errThrift
		}
		t.i += 8
	case 8: // binary
		n, err := t.uvarint()
		if err != nil {
			return err
		}
		if n > uint64(len(t.b)-t.i) {
			return errThrift
		}
		t.i += int(n)
	case 9, 10: // list, set
		b, err := t.byte1()
		if err != nil {
			return err
		}
		n := uint64(b >> 4)
		if n == 15 {
			if n, err = t.uvarint(); err != nil {
				return err
			}
		}
		if err := t.entries(n); err != nil {
			return err
		}
		for range n {
			if err := t.value(b&0xf, depth+1, path, false); err != nil {
				return err
			}
		}
	case 11: // map
		n, err := t.uvarint()
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		kv, err := t.byte1()
		if err != nil {
			return err
		}
		if err := t.entries(2 * n); err != nil {
			return err
		}
		for range n {
			if err := t.value(kv>>4, depth+1, path, false); err != nil {
				return err
			}
			if err := t.value(kv&0xf, depth+1, path, false); err != nil {
				return err
			}
		}
	case 12: // struct
		return t.structure(depth+1, path)
	default:
		return fmt.Errorf("%w: type %d", errThrift, typ)
	}
	return nil
}

// entries counts n list entries against the bytes left and the bound.
func (t *thriftWalk) entries(n uint64) error {
	if n > uint64(len(t.b)-t.i) {
		return fmt.Errorf("a list of %d entries in %d bytes: %w", n, len(t.b)-t.i, errThrift)
	}
	if t.lists -= int(n); t.lists < 0 {
		return fmt.Errorf("more than %d list entries: %w", maxListEntries, errBound)
	}
	return nil
}
