package db

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/tqmon/tqmon/algebra"
)

// Checking and repairing. Check opens a database as a salvaging reader
// (which validates every badger table and write-ahead log, see view.go),
// then decodes every record of every relation — blocks, checkpoint parts,
// ends parts — checking its CRC and structure, reads every relation whole
// through a Source, and accounts for every block and ends part its state
// says was written: the sequence numbers 0 … nextSeq−1 are each a block or
// an ends part, save those retention dropped below the floor, so a missing
// one is a block lost with a table left out, dated between its neighbours.
// Repair copies every intact record into a new database (never in place)
// and reports, per relation, the spans lost.

// RelationReport counts what Check verified of one relation.
type RelationReport struct {
	Name        string
	Blocks      int // blocks that decode
	Elements    int // elements in them
	Checkpoints int // checkpoint parts that decode
	EndsParts   int // ends parts that decode
}

// Report is what Check (or Repair) found.
type Report struct {
	Dir       string
	Live      bool // a writer had the database: the report is of what it had committed
	Relations []RelationReport
	Damage    []Damage
}

// OK reports a database with no damage.
func (r *Report) OK() bool { return len(r.Damage) == 0 }

// Write prints the report: one line per relation, then the damage.
func (r *Report) Write(w io.Writer) error {
	live := ""
	if r.Live {
		live = " (being recorded: what it has committed)"
	}
	fmt.Fprintf(w, "database %s%s\n", r.Dir, live)
	for _, rel := range r.Relations {
		fmt.Fprintf(w, "  %-20s %8d blocks %10d elements %6d checkpoint parts %6d ends parts\n",
			rel.Name, rel.Blocks, rel.Elements, rel.Checkpoints, rel.EndsParts)
	}
	if r.OK() {
		_, err := fmt.Fprintln(w, "no damage")
		return err
	}
	fmt.Fprintf(w, "%d damaged:\n", len(r.Damage))
	var err error
	for _, d := range r.Damage {
		_, err = fmt.Fprintf(w, "  %s\n", d)
	}
	return err
}

// Check verifies every badger table, write-ahead log and record of the
// database at dir, reading it as Open with ReadOnly and Salvage does
// (never writing; of opts, Log and ViewDir count). Damage is in the
// report; the error is for a database that cannot be checked at all (not
// one, no description of its relations).
func Check(dir string, opts Options) (*Report, error) {
	d, err := Open(dir, Options{ReadOnly: true, Salvage: true, Log: opts.Log, ViewDir: opts.ViewDir})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var rep *Report
	err = guard(dir, func() error {
		rep, _ = d.verify(true)
		return nil
	})
	return rep, err
}

// Repair copies everything intact of the database at dir into a new
// database at out (which must not exist or be empty) and reports what was
// lost. The damaged database is only read (as by Check).
func Repair(dir, out string, opts Options) (*Report, error) {
	src, err := Open(dir, Options{ReadOnly: true, Salvage: true, Log: opts.Log, ViewDir: opts.ViewDir})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var rep *Report
	var intact []relIntact
	if err := guard(dir, func() error { rep, intact = src.verify(true); return nil }); err != nil {
		return nil, err
	}
	dst, err := Create(out, src.Spec())
	if err != nil {
		return nil, err
	}
	if err := guard(dir, func() error { return src.copyInto(dst, intact) }); err != nil {
		dst.Close()
		return nil, fmt.Errorf("repair into %s: %w", out, err)
	}
	if err := dst.Close(); err != nil {
		return nil, fmt.Errorf("repair into %s: %w", out, err)
	}
	return rep, nil
}

// relIntact is what verify found intact of one relation.
type relIntact struct {
	keys  [][]byte // intact blocks, checkpoint parts and ends parts
	state relState // the state recounted over the intact blocks
}

// assess dates the damage found opening the database (its tables and
// logs), and adds what it costs each relation, from their keys alone.
func (d *DB) assess(dmg []Damage) []Damage {
	d.opened = d.date(dmg)
	var rep *Report
	if err := guard(d.dir, func() error { rep, _ = d.verify(false); return nil }); err != nil {
		return append(d.opened, Damage{Detail: err.Error()})
	}
	return rep.Damage
}

// date says what each damaged table or log costs.
func (d *DB) date(dmg []Damage) []Damage {
	var out []Damage
	through := d.through()
	for _, dm := range dmg {
		switch {
		case dm.walLoss:
			dm.Lost = &algebra.Window{From: through, To: algebra.Forever}
			dm.Detail += fmt.Sprintf(": what was recorded after %s is lost", spanTime(through))
		case dm.keys[0] != nil:
			a, errA := parseKey(dm.keys[0])
			b, errB := parseKey(dm.keys[1])
			if errA == nil && errB == nil && a.rel == b.rel && a.prefix != pEnds && b.prefix != pEnds && int(a.rel) < len(d.rels) {
				dm.Rel = d.rels[a.rel].rel.Name
				dm.Lost = &algebra.Window{From: a.t, To: b.t}
			}
			dm.Detail += fmt.Sprintf(": table left out (it holds keys from %s to %s)", d.describeKey(dm.keys[0]), d.describeKey(dm.keys[1]))
		case dm.File != "":
			dm.Detail += ": table left out"
		}
		out = append(out, dm)
	}
	return out
}

// verify accounts for every record of every relation (with values,
// decoding each), after the damage found opening the database.
func (d *DB) verify(values bool) (*Report, []relIntact) {
	rep := &Report{Dir: d.dir, Live: d.Live()}
	rep.Damage = append(rep.Damage, d.opened...)
	intact := make([]relIntact, len(d.rels))
	for i, m := range d.rels {
		rr, dmg := d.verifyRel(m, values, &intact[i])
		rep.Relations = append(rep.Relations, rr)
		rep.Damage = append(rep.Damage, dmg...)
	}
	return rep, intact
}

// describeKey names what a key holds.
func (d *DB) describeKey(key []byte) string {
	if len(key) == 0 {
		return "?"
	}
	switch key[0] {
	case pFormat:
		return "the format"
	case pSpec:
		return "the sensor description"
	case pWindow:
		return "the window"
	case pObserved:
		return "the observation"
	}
	name := func(rel uint16) string {
		if int(rel) < len(d.rels) {
			return d.rels[rel].rel.Name
		}
		return fmt.Sprintf("relation %d", rel)
	}
	if len(key) == 3 && (key[0] == pRelation || key[0] == pState) {
		return name(uint16(key[1])<<8|uint16(key[2])) + "'s descriptor or state"
	}
	k, err := parseKey(key)
	if err != nil {
		return fmt.Sprintf("%x", key)
	}
	switch k.prefix {
	case pBlock:
		return fmt.Sprintf("%s's block at %s", name(k.rel), spanTime(k.t))
	case pCheck:
		return fmt.Sprintf("%s's checkpoint at %s", name(k.rel), spanTime(k.t))
	}
	return fmt.Sprintf("%s's ends of tuples from %d", name(k.rel), k.bucket<<EndsBucketBits)
}

// through is the end of what the database holds complete: its window's
// end, else its latest time.
func (d *DB) through() algebra.Time {
	if d.window != nil {
		return d.window.To
	}
	t := algebra.Beginning
	for _, m := range d.rels {
		t = max(t, m.state.frontier, m.state.extEnd)
	}
	return t
}

type seqAt struct {
	seq uint64
	t   int64 // a block's time; an ends part has none
	blk bool
}

func (d *DB) verifyRel(m *relMeta, values bool, in *relIntact) (RelationReport, []Damage) {
	rr := RelationReport{Name: m.rel.Name}
	var dmg []Damage
	type dating struct {
		i int
		t int64
	}
	var damagedBlocks []dating
	bad := func(detail string, lost *algebra.Window) {
		dmg = append(dmg, Damage{Rel: m.rel.Name, Detail: detail, Lost: lost})
	}
	st := m.state
	st.tuples, st.elements, st.blocks = 0, 0, 0
	var seqs []seqAt
	var blockTimes []int64
	txn := d.bdb.NewTransaction(false)
	defer txn.Discard()
	each := func(p byte, fn func(k parsedKey, key, v []byte) error) {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = relKey(p, m.id)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			key := item.KeyCopy(nil)
			k, err := parseKey(key)
			if err != nil {
				bad(fmt.Sprintf("key %x: %v", key, err), nil)
				continue
			}
			var v []byte
			if values {
				if v, err = item.ValueCopy(nil); err != nil {
					err = fmt.Errorf("%w: %v", ErrCorrupt, err)
				}
			}
			if err == nil {
				err = fn(k, key, v)
			}
			if err != nil {
				var be *blockError
				if errors.As(err, &be) {
					damagedBlocks = append(damagedBlocks, dating{len(dmg), be.t})
				}
				bad(err.Error(), nil)
				continue
			}
			in.keys = append(in.keys, key)
		}
	}
	each(pBlock, func(k parsedKey, _, v []byte) error {
		seqs = append(seqs, seqAt{k.seq, k.t, true})
		blockTimes = append(blockTimes, k.t)
		if !values {
			return nil
		}
		br, err := openBlock(v, m.id, m.sch)
		if err != nil {
			return blockErr(k, err)
		}
		if br.first != k.t {
			return blockErr(k, fmt.Errorf("%w: its first element is at %s", ErrCorrupt, spanTime(br.first)))
		}
		var e elem
		var n, tuples int
		for {
			ok, err := br.next(&e)
			if err != nil {
				return blockErr(k, err)
			}
			if !ok {
				break
			}
			n++
			if !m.state.extOK {
				if !st.extOK {
					st.extOK, st.extStart, st.extEnd = true, e.t, algebra.Beginning
				}
				st.extStart = min(st.extStart, e.t)
				st.extEnd = max(st.extEnd, e.t)
			}
			if e.kind != kEnd {
				tuples++
				st.nextID = max(st.nextID, e.id+1)
			}
			st.frontier = max(st.frontier, e.t)
		}
		rr.Blocks++
		rr.Elements += n
		st.blocks++
		st.elements += uint64(n)
		st.tuples += uint64(tuples)
		st.nextSeq = max(st.nextSeq, k.seq+1)
		return nil
	})
	each(pCheck, func(k parsedKey, _, v []byte) error {
		if !values {
			return nil
		}
		at, _, err := decodeCheckpoint(v, m.id, m.sch)
		if err == nil && at != k.t {
			err = fmt.Errorf("%w: filed under %s", ErrCorrupt, spanTime(k.t))
		}
		if err != nil {
			return fmt.Errorf("checkpoint at %s: %w (reads that would start there start at the one before)", spanTime(k.t), err)
		}
		rr.Checkpoints++
		return nil
	})
	each(pEnds, func(k parsedKey, _, v []byte) error {
		seqs = append(seqs, seqAt{seq: k.seq})
		if !values {
			return nil
		}
		b, _, err := decodeEnds(v, m.id)
		if err == nil && b != k.bucket {
			err = fmt.Errorf("%w: filed under bucket %d", ErrCorrupt, k.bucket)
		}
		if err != nil {
			return fmt.Errorf("ends of tuples %d to %d: %w (reads of windows before they end show them open)",
				k.bucket<<EndsBucketBits, (k.bucket+1)<<EndsBucketBits-1, err)
		}
		rr.EndsParts++
		st.nextSeq = max(st.nextSeq, k.seq+1)
		return nil
	})
	slices.Sort(blockTimes)
	// Date each damaged block: from its time to the next block's.
	for _, b := range damagedBlocks {
		j := sort.Search(len(blockTimes), func(j int) bool { return blockTimes[j] > b.t })
		to := algebra.Forever
		if j < len(blockTimes) {
			to = blockTimes[j]
		}
		dmg[b.i].Lost = &algebra.Window{From: b.t, To: to}
	}
	dmg = append(dmg, missingSeqs(m, seqs)...)
	// A relation whose records all decode is read whole, as readers would.
	if values && len(dmg) == 0 {
		if src, err := d.NewSource([]Read{{Rel: m.rel.Name}}); err != nil {
			bad(err.Error(), nil)
		} else {
			for {
				_, _, ok, err := src.Next()
				if err != nil {
					bad(err.Error(), nil)
				}
				if !ok || err != nil {
					break
				}
			}
			src.Close()
		}
	}
	st.nextID = max(st.nextID, m.state.nextID)
	in.state = st
	return rr, dmg
}

// blockError carries the time of the damaged block, to be dated.
type blockError struct {
	t   int64
	seq uint64
	err error
}

func blockErr(k parsedKey, err error) error { return &blockError{k.t, k.seq, err} }

func (e *blockError) Error() string {
	return fmt.Sprintf("block at %s (sequence %d): %v", spanTime(e.t), e.seq, e.err)
}

func (e *blockError) Unwrap() error { return e.err }

// missingSeqs dates the blocks and ends parts a relation's state says were
// written and are gone: between the blocks written before and after them.
func missingSeqs(m *relMeta, seqs []seqAt) []Damage {
	top := m.state.nextSeq
	for _, s := range seqs {
		top = max(top, s.seq+1)
	}
	have := make(map[uint64]seqAt, len(seqs))
	for _, s := range seqs {
		have[s.seq] = s
	}
	var out []Damage
	for s := uint64(0); s < top; s++ {
		if _, ok := have[s]; ok {
			continue
		}
		e := s
		for e+1 < top {
			if _, ok := have[e+1]; ok {
				break
			}
			e++
		}
		from, to := algebra.Beginning, algebra.Forever
		for p := int64(s) - 1; p >= 0; p-- {
			if b, ok := have[uint64(p)]; ok && b.blk {
				from = b.t
				break
			}
		}
		for n := e + 1; n < top; n++ {
			if b, ok := have[n]; ok && b.blk {
				to = b.t
				break
			}
		}
		s = e
		if m.state.floorOK && to <= m.state.floor {
			continue // dropped by retention
		}
		out = append(out, Damage{Rel: m.rel.Name, Detail: fmt.Sprintf("%d blocks or ends parts missing (in a table left out, or after a log's damage)", e-s+1),
			Lost: &algebra.Window{From: from, To: to}})
	}
	return out
}

// copyInto writes the intact records into a new database, with each
// relation's state recounted over what was copied, and the window. The
// sequence numbers of blocks and ends parts are renumbered densely, in
// their order, so that the new database accounts for all of its own.
func (d *DB) copyInto(dst *DB, intact []relIntact) error {
	wb := dst.bdb.NewWriteBatch()
	defer wb.Cancel()
	err := d.bdb.View(func(txn *badger.Txn) error {
		for i, m := range d.rels {
			var seqs []uint64
			for _, k := range intact[i].keys {
				if k[0] == pBlock || k[0] == pEnds {
					seqs = append(seqs, binary.BigEndian.Uint64(k[11:]))
				}
			}
			slices.Sort(seqs)
			seqs = slices.Compact(seqs)
			for _, k := range intact[i].keys {
				item, err := txn.Get(k)
				if err != nil {
					return err
				}
				v, err := item.ValueCopy(nil)
				if err != nil {
					return err
				}
				if k[0] == pBlock || k[0] == pEnds {
					n, _ := slices.BinarySearch(seqs, binary.BigEndian.Uint64(k[11:]))
					k = slices.Clone(k)
					binary.BigEndian.PutUint64(k[11:], uint64(n))
				}
				if err := wb.Set(k, v); err != nil {
					return err
				}
			}
			st := intact[i].state
			st.nextSeq = uint64(len(seqs))
			if err := wb.Set(relKey(pState, m.id), encodeState(&st)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if d.window != nil {
		if err := wb.Set(singleKey(pWindow), encodeWindow(*d.window)); err != nil {
			return err
		}
	}
	if d.observation != nil {
		if err := wb.Set(singleKey(pObserved), encodeObservation(*d.observation)); err != nil {
			return err
		}
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	return dst.bdb.Sync()
}
