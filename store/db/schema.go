package db

import (
	"encoding/binary"
	"fmt"
)

// The key schema. Every key begins with one prefix byte naming what it
// holds; fixed-width fields follow, all big-endian, so that badger's byte
// order is the order readers need. Times are int64 nanoseconds stored with
// the sign bit flipped (uint64(t) ^ 1<<63), which makes byte order time
// order, Beginning (math.MinInt64) first and Forever last. Keys hold no
// variable-length field: relations are named in keys by a 2-byte id, and
// names, texts and tuples live in values, where every variable-length field
// (strings, dictionaries, lists) is preceded by its length as a uvarint.
//
//	prefix        key                                     value (codec.go)
//	0x01 format   [0x01]                                  magic "tqmon-store" + format version (uint32)
//	0x02 spec     [0x02]                                  sensor description: file name, SDL text
//	0x03 window   [0x03]                                  observation window (from, to), when known
//	0x04 observed [0x04]                                  the observation: Observed and Lost tuples (observation.go)
//	0x10 relation [0x10][rel u16]                         relation descriptor: name, signature
//	0x11 state    [0x11][rel u16]                         relation state: counters, extent, retention floor
//	0x20 block    [0x20][rel u16][time][seq u64]          a block: a time-ordered run of elements
//	0x21 check    [0x21][rel u16][time][seq u64]          a checkpoint part: tuples open at time
//	0x22 ends     [0x22][rel u16][bucket u64][seq u64]    ends of interval tuples whose id is in bucket
//
// Elements. A relation's history is stored as the stream the interpreter
// consumes: Begin (an interval tuple's values and start, under a tuple id
// the relation allots in order of arrival), End (the id and the end) and
// Event. Blocks hold runs of elements in time order (at equal times Ends
// first); a block's key carries the time of its first element and a
// sequence number unique within the relation. Blocks written in order
// never overlap; a Begin learnt late (a sample first seen after its
// tuple began, a traced-then-disabled tuple reported whole at its end) goes
// into a block of its own, keyed by its own time, which readers merge.
// An interval is recorded when it begins (a Begin) and closed when it ends
// (an End), so an interval open when recording stops — or when the process
// is killed — is read back as open.
//
// Checkpoints. Every so often (see WriterOptions) a relation writes a
// checkpoint at time c: every tuple open at c (begun before c, not ended
// before c) with its values, under seq 0; tuples learnt late that were open
// at c are added later as further parts (seq 1, 2, …). No block holds
// elements on both sides of a checkpoint, so a read that starts at time t
// takes the last checkpoint at or before t and the blocks from there on.
//
// Ends. A read over a time window must also know when the tuples it
// delivers end, even long after the window. Each End is therefore also
// filed under its tuple's id: ends parts map ids in bucket id>>EndsBucketBits
// to end times, so the ends of the tuples still open at the end of a window
// cost a lookup per bucket, not a scan of the rest of the history.
//
// Retention. Dropping data older than a cutoff moves the relation's floor
// to its last checkpoint at or before the cutoff (recorded in its state
// first), then deletes the keys below it; readers never look below the
// floor.
const (
	pFormat   byte = 0x01
	pSpec     byte = 0x02
	pWindow   byte = 0x03
	pObserved byte = 0x04
	pRelation byte = 0x10
	pState    byte = 0x11
	pBlock    byte = 0x20
	pCheck    byte = 0x21
	pEnds     byte = 0x22
)

// EndsBucketBits is log2 of the number of tuple ids an ends bucket covers.
const EndsBucketBits = 10

// FormatVersion is the on-disk format version; Open refuses any other.
const FormatVersion uint32 = 1

// magic opens the format record.
const magic = "tqmon-store"

func timeKey(t int64) uint64 { return uint64(t) ^ 1<<63 }
func keyTime(u uint64) int64 { return int64(u ^ 1<<63) }

func singleKey(p byte) []byte { return []byte{p} }

// relKey is [prefix][rel].
func relKey(p byte, rel uint16) []byte {
	k := make([]byte, 3)
	k[0] = p
	binary.BigEndian.PutUint16(k[1:], rel)
	return k
}

// timedKey is [prefix][rel][time][seq]: blocks and checkpoint parts.
func timedKey(p byte, rel uint16, t int64, seq uint64) []byte {
	k := make([]byte, 19)
	k[0] = p
	binary.BigEndian.PutUint16(k[1:], rel)
	binary.BigEndian.PutUint64(k[3:], timeKey(t))
	binary.BigEndian.PutUint64(k[11:], seq)
	return k
}

// endsKey is [pEnds][rel][bucket][seq].
func endsKey(rel uint16, bucket, seq uint64) []byte {
	k := make([]byte, 19)
	k[0] = pEnds
	binary.BigEndian.PutUint16(k[1:], rel)
	binary.BigEndian.PutUint64(k[3:], bucket)
	binary.BigEndian.PutUint64(k[11:], seq)
	return k
}

// parsedKey is a decoded 19-byte key.
type parsedKey struct {
	prefix byte
	rel    uint16
	t      int64  // time (blocks, checkpoints)
	bucket uint64 // ends
	seq    uint64
}

func parseKey(k []byte) (parsedKey, error) {
	if len(k) != 19 {
		return parsedKey{}, fmt.Errorf("%w: key %x has %d bytes, want 19", ErrCorrupt, k, len(k))
	}
	pk := parsedKey{prefix: k[0], rel: binary.BigEndian.Uint16(k[1:]), seq: binary.BigEndian.Uint64(k[11:])}
	mid := binary.BigEndian.Uint64(k[3:])
	if pk.prefix == pEnds {
		pk.bucket = mid
	} else {
		pk.t = keyTime(mid)
	}
	return pk, nil
}

func bucketOf(id uint64) uint64 { return id >> EndsBucketBits }
