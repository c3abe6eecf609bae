package history

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/sensor"
)

// maxErrors caps the diagnostics collected from one CSV file.
const maxErrors = 20

// Dir is a history directory opened for reading: its sensor description
// compiled, its observation window read, its relation files found and
// checked to be regular files; no relation's file read yet. Load reads
// the relations a caller names into tables, Source streams them.
type Dir struct {
	// Path is the directory.
	Path string
	// Catalog is the sensor description's.
	Catalog *algebra.Catalog
	// Window is observation.csv's span, nil without one.
	Window *algebra.Window
	// entries are the directory's .csv files in name order.
	entries []entry
	files   map[string]string // relation → its file
}

// entry is one .csv file of a history directory: a relation's (rel set),
// or diagnostics about a file that is none (errs).
type entry struct {
	path string
	rel  *algebra.Relation
	errs []*source.Error
}

// Load reads a history directory: every relation's file. Errors are
// positioned (source.ErrorList) where they concern a file's content.
func Load(dir string) (*algebra.History, error) {
	d, err := open(dir)
	if err != nil {
		return nil, err
	}
	return d.load(nil, true)
}

// Open opens a history directory. It reads the sensor description and
// observation.csv and checks the directory's files, as Load does, but
// reads no relation's file.
func Open(dir string) (*Dir, error) {
	d, err := open(dir)
	if err != nil {
		return nil, err
	}
	var errs source.ErrorList
	for _, e := range d.entries {
		errs = append(errs, e.errs...)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return d, nil
}

// open reads what Open reads, keeping the diagnostics about the
// directory's files with their entries.
func open(dir string) (*Dir, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", dir, err)
	}
	var specs, csvs []string
	for _, e := range ents {
		switch filepath.Ext(e.Name()) {
		case ".sdl":
			specs = append(specs, e.Name())
		case ".csv":
			csvs = append(csvs, e.Name())
		}
	}
	switch len(specs) {
	case 0:
		return nil, fmt.Errorf("history %s: no sensor-description (.sdl) file", dir)
	case 1:
	default:
		return nil, fmt.Errorf("history %s: several .sdl files (%s); a history has exactly one", dir, strings.Join(specs, ", "))
	}
	specPath := filepath.Join(dir, specs[0])
	cat, err := LoadSpec(specPath)
	if err != nil {
		return nil, err
	}
	d := &Dir{Path: dir, Catalog: cat, files: map[string]string{}}
	sort.Strings(csvs)
	for _, name := range csvs {
		base := strings.TrimSuffix(name, ".csv")
		path := filepath.Join(dir, name)
		if base == "observation" {
			w, err := readWindow(path)
			if err != nil {
				d.entries = append(d.entries, entry{path: path, errs: source.Diagnostics(err)})
				continue
			}
			d.Window = w
			continue
		}
		if !isIdent(base) {
			// Not a relation's file (e.g. an expected result, x.expected.csv).
			continue
		}
		rel := cat.Lookup(base)
		if err := regularFile(path); err != nil {
			if rel == nil {
				continue // not a relation's file, and no file at all
			}
			return nil, fmt.Errorf("history %s: %s's file %w", dir, rel.Name, err)
		}
		if rel == nil {
			// Not read: a file that is no relation's history is not echoed.
			d.entries = append(d.entries, entry{path: path, errs: []*source.Error{
				source.Errorf(path, source.Pos{Line: 1, Col: 1}, "no relation %s in %s", base, specPath)}})
			continue
		}
		d.entries = append(d.entries, entry{path: path, rel: rel})
		d.files[rel.Name] = path
	}
	return d, nil
}

// Load reads the named relations' files (all, when none is named) into a
// history; the tables of the others are empty. Its Window is the
// directory's.
func (d *Dir) Load(rels ...string) (*algebra.History, error) {
	for _, name := range rels {
		if d.Catalog.Lookup(name) == nil {
			return nil, fmt.Errorf("history %s: no relation %s", d.Path, name)
		}
	}
	return d.load(rels, false)
}

// load reads the named relations (all when rels is nil), and, with
// withErrs, reports the diagnostics open kept about other files, in file
// order.
func (d *Dir) load(rels []string, withErrs bool) (*algebra.History, error) {
	h := algebra.NewHistory(d.Catalog)
	h.Window = d.Window
	var errs source.ErrorList
	in := &interner{}
	for _, e := range d.entries {
		if withErrs {
			errs = append(errs, e.errs...)
		}
		if e.rel == nil || rels != nil && !slices.Contains(rels, e.rel.Name) {
			continue
		}
		if err := readFileInto(e.path, h.Table(e.rel.Name), in); err != nil {
			if len(source.Diagnostics(err)) == 0 {
				return nil, err
			}
			errs = append(errs, source.Diagnostics(err)...)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return h, nil
}

// readFileInto reads a relation's file into t, streaming it.
func readFileInto(path string, t *algebra.Table, in *interner) error {
	f, err := openRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return readInto(newRelReader(path, f, t.Rel, in), t)
}

// readInto appends the tuples r reads to t. They are gathered in chunks,
// then copied once into a table of the right size: growing the table
// tuple by tuple would copy it many times over.
func readInto(r *relReader, t *algebra.Table) error {
	var chunks [][]algebra.Tuple
	cur := make([]algebra.Tuple, 0, 16) // (doubling: a small file costs little)
	n := 0
	var tu tuple
	// An entity relation's rows are checked once all are read (in any
	// order): their places are kept meanwhile.
	st := newStates(r.file, r.rel)
	var places []place
	for r.next(&tu) {
		if len(cur) == cap(cur) {
			chunks = append(chunks, cur)
			cur = make([]algebra.Tuple, 0, min(2*cap(cur), 64<<10))
		}
		cur = append(cur, algebra.Tuple{Vals: tu.vals, From: tu.from, To: tu.to})
		if st != nil {
			places = append(places, placeOf(r.fpos(r.fromCol)))
		}
		n++
	}
	chunks = append(chunks, cur)
	base := len(t.Rows)
	t.Rows = slices.Grow(t.Rows, n)
	for _, c := range chunks {
		t.Rows = append(t.Rows, c...)
	}
	if st != nil && r.fatal == nil {
		st.checkAll(t.Rows[base:], places, &r.errs)
	}
	return r.err()
}

// readWindow reads observation.csv: a header "from,to" and one row, the
// span the history observed.
func readWindow(path string) (*algebra.Window, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	src := source.NewFile(path, string(data))
	r := csv.NewReader(bytes.NewReader(data))
	recs, err := r.ReadAll()
	if err != nil {
		return nil, src.Errorf(source.Pos{}, "%v", err)
	}
	if len(recs) != 2 || len(recs[0]) != 2 || recs[0][0] != "from" || recs[0][1] != "to" || len(recs[1]) != 2 {
		return nil, src.Errorf(source.Pos{Line: 1, Col: 1}, "want a header from,to and one row: the span the history observed")
	}
	from, err := algebra.ParseTime(strings.TrimSpace(recs[1][0]))
	if err != nil {
		return nil, src.Errorf(source.Pos{Line: 2, Col: 1}, "from: %v", err)
	}
	to, err := algebra.ParseTime(strings.TrimSpace(recs[1][1]))
	if err != nil {
		return nil, src.Errorf(source.Pos{Line: 2, Col: len(recs[1][0]) + 2}, "to: %v", err)
	}
	if to < from {
		return nil, src.Errorf(source.Pos{Line: 2, Col: 1}, "to is before from")
	}
	return &algebra.Window{From: from, To: to}, nil
}

// MaxFileSize is the largest history file (CSV or sensor description)
// Load reads: 4 GiB. A larger one is an error, not an attempt to hold it.
const MaxFileSize = 4 << 30

// MaxLine is the longest line a history CSV file may have: 1 MiB. A longer
// one is an error naming its line, before any of it is parsed.
const MaxLine = 1 << 20

// regularFile checks that path (after symbolic links) is a regular file
// (source.CheckRegular), naming it by its base name.
func regularFile(path string) error {
	return source.CheckRegular(path, filepath.Base(path))
}

// openRegular opens a regular file (and only one: see regularFile).
func openRegular(path string) (*os.File, error) {
	if err := regularFile(path); err != nil {
		return nil, err
	}
	return os.Open(path)
}

// readFile reads a regular file of at most MaxFileSize bytes.
func readFile(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes, the most a history file may be", path, int64(MaxFileSize))
	}
	return data, nil
}

func isIdent(s string) bool {
	for i, r := range s {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9' {
			continue
		}
		return false
	}
	return s != ""
}

// LoadSpec parses and compiles a sensor-description file.
func LoadSpec(path string) (*algebra.Catalog, error) {
	text, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return sensor.CompileText(path, string(text))
}

// ReadCSV reads one relation's CSV into t, appending tuples. file names the
// source in diagnostics. They carry data as their text, to show their line,
// except those about text that may not be a history at all (over-long
// lines, bytes that are not UTF-8 or NUL, a first line naming none of the
// relation's columns): those do not echo it.
func ReadCSV(file string, data []byte, t *algebra.Table) error {
	for i, n := 0, 1; i < len(data); n++ {
		l := bytes.IndexByte(data[i:], '\n')
		if l < 0 {
			l = len(data) - i
		}
		if l > MaxLine {
			return lineTooLong(file, n)
		}
		i += l + 1
	}
	return readInto(newRelReader(file, bytes.NewReader(data), t.Rel, &interner{}), t)
}

func lineTooLong(file string, line int) *source.Error {
	return source.Errorf(file, source.Pos{Line: line, Col: 1}, "line %d is longer than %d bytes, the most a history line may be", line, MaxLine)
}

// tuple is a tuple read from a file.
type tuple struct {
	vals     []algebra.Value
	from, to algebra.Time
}

// relReader reads one relation's CSV file tuple by tuple, checking
// everything (see ReadCSV) and collecting diagnostics; it holds one record
// at a time.
type relReader struct {
	file   string
	rel    *algebra.Relation
	csv    *csvReader
	in     *interner
	errs   source.ErrorList
	fatal  error // an error reading the file: no diagnostics, no more tuples
	header bool  // the header was read, and is good
	done   bool  // no more tuples
	// timesOnly reads only the tuples' times (their values unchecked, nil).
	timesOnly bool

	nfields          int   // the header's fields
	attrCol          []int // each attribute's column
	parsers          []valueParser
	fromCol, toCol   int // an event's at is fromCol; toCol is then -1
	fromName, toName string

	slabRows int // tuples the next slab holds: 8, doubling to 256 (a small file costs little)

	slab []algebra.Value // values of tuples to come, allocated together
	vecs vectors         // the value vectors of rows read, shared by rows alike
	src  *source.File    // the current record's text, once a diagnostic needs it

	// states, when set, checks an entity relation's rows as they are read
	// (a stream: Dir.Source); only while they come in order of their
	// starts — a stream fails on the first that does not, and the file is
	// then read whole and checked in order (readInto).
	states   *states
	nrows    int          // good rows read
	lastFrom algebra.Time // the start of the last good row
}

func newRelReader(file string, r io.Reader, rel *algebra.Relation, in *interner) *relReader {
	return &relReader{file: file, rel: rel, csv: newCSVReader(r), in: in}
}

// recordSrc is the current record's lines, for diagnostics that show them.
func (r *relReader) recordSrc() *source.File {
	if r.src == nil {
		r.src = source.NewFileAt(r.file, r.csv.recLine, string(r.csv.recordText()))
	}
	return r.src
}

// pos converts a line and byte column of the current record into a
// position (columns count characters); past the end of its line it
// points just after the line's last character.
func (r *relReader) pos(line, byteCol int) source.Pos {
	col := byteCol
	text := r.csv.recordText()
	for i := r.csv.recLine; i < line && text != nil; i++ {
		if j := bytes.IndexByte(text, '\n'); j >= 0 {
			text = text[j+1:]
		} else {
			text = nil
		}
	}
	if text != nil && byteCol >= 1 {
		if j := bytes.IndexByte(text, '\n'); j >= 0 {
			text = text[:j]
		}
		if byteCol-1 <= len(text) {
			col = utf8.RuneCount(text[:byteCol-1]) + 1
		} else {
			col = utf8.RuneCount(text) + 1
		}
	}
	return source.Pos{Line: line, Col: col}
}

func (r *relReader) fpos(i int) source.Pos {
	p := r.csv.positions[i]
	return r.pos(p.line, p.col)
}

// The outcomes of relReader.read.
const (
	recordGood = iota
	recordBad  // not CSV; diagnosed
	recordEnd  // the end of the input, or reading stops
)

// read reads the next record (a diagnostic recorded if it is not CSV, or
// if reading must stop).
func (r *relReader) read() int {
	r.src = nil
	err := r.csv.read()
	if e, ok := err.(*csvError); ok {
		r.errs = append(r.errs, r.recordSrc().Errorf(r.pos(e.line, e.col), "%v", e.err))
		return recordBad
	}
	switch err {
	case nil:
		return recordGood
	case io.EOF:
	case errLineTooLong:
		// Only this: the file may not be a history at all.
		r.errs = source.ErrorList{lineTooLong(r.file, r.csv.numLine+1)}
	case errRecordTooLong:
		r.errs = source.ErrorList{source.Errorf(r.file, source.Pos{Line: r.csv.recLine, Col: 1},
			"the record from line %d is longer than %d bytes, the most a history record may be", r.csv.recLine, MaxRecord)}
	default:
		r.fatal = fmt.Errorf("%s: %w", r.file, err)
	}
	return recordEnd
}

// readHeader reads and checks the header row, mapping columns to
// attributes and times.
func (r *relReader) readHeader() bool {
	rel, file := r.rel, r.file
	r.csv.recLine = 1
	switch r.read() {
	case recordBad:
		return false // a header that is not CSV: nothing more
	case recordEnd:
		if len(r.errs) == 0 && r.fatal == nil {
			r.errs.AddIn(source.NewFile(file, ""), file, source.Pos{Line: 1, Col: 1}, "empty file: expected a header row")
		}
		return false
	}
	header := make([]string, len(r.csv.fields))
	for i, f := range r.csv.fields {
		header[i] = string(f)
	}
	timeCols := []string{"from", "to"}
	if rel.IsEvent() {
		timeCols = []string{"at"}
	}
	if !anyKnownColumn(rel, timeCols, header) {
		// Not this relation's history at all (perhaps not a CSV file):
		// say so without echoing what the file holds.
		r.errs.Add(file, source.Pos{Line: 1, Col: 1}, "not a history of %s: the first line names none of its columns (%s)", rel.Name, describeColumns(rel, timeCols))
		return false
	}
	src := r.recordSrc()
	errs := &r.errs
	col := map[string]int{}
	for i, name := range header {
		name = strings.TrimSpace(name)
		if i == 0 {
			name = strings.TrimPrefix(name, "\ufeff")
		}
		if msg := badText(name); msg != "" {
			errs.Add(file, r.fpos(i), "column name %s", msg)
			continue
		}
		if name == "" {
			errs.AddIn(src, file, r.fpos(i), "empty column name: %s has %s", rel.Name, describeColumns(rel, timeCols))
			continue
		}
		if p, dup := col[name]; dup {
			errs.AddIn(src, file, r.fpos(i), "column %s appears twice (also column %d)", name, p+1)
			continue
		}
		known := rel.AttrIndex(name) >= 0 || slices.Contains(timeCols, name)
		if !known {
			errs.AddIn(src, file, r.fpos(i), "unknown column %s: %s has %s", clip(name), rel.Name, describeColumns(rel, timeCols))
			continue
		}
		col[name] = i
	}
	for _, a := range rel.Attrs {
		if _, ok := col[a.Name]; !ok {
			errs.AddIn(src, file, source.Pos{Line: 1, Col: 1}, "missing column %s (%s has %s)", a.Name, rel.Name, describeColumns(rel, timeCols))
		}
	}
	for _, tc := range timeCols {
		if _, ok := col[tc]; !ok {
			errs.AddIn(src, file, source.Pos{Line: 1, Col: 1}, "missing column %s (%s is an %s relation: %s)", tc, rel.Name, classWord(rel), strings.Join(timeCols, ","))
		}
	}
	if len(r.errs) > 0 {
		return false
	}
	r.nfields = len(header)
	for _, a := range rel.Attrs {
		r.attrCol = append(r.attrCol, col[a.Name])
		r.parsers = append(r.parsers, newValueParser(a.Type))
	}
	r.fromCol, r.fromName, r.toCol = col[timeCols[0]], timeCols[0], -1
	if !rel.IsEvent() {
		r.toCol, r.toName = col["to"], "to"
	}
	return true
}

// next reads the next good tuple into t; false at the end, or once
// reading stops (too many errors, a line too long, a read error).
func (r *relReader) next(t *tuple) bool {
	if r.done {
		return false
	}
	if !r.header {
		if !r.readHeader() {
			r.done = true
			return false
		}
		r.header = true
	}
	for {
		ok := false
		switch r.read() {
		case recordEnd:
			r.done = true
			return false
		case recordGood:
			ok = r.row(t)
		}
		if len(r.errs) >= maxErrors {
			r.done = true
			return false
		}
		if ok {
			return true
		}
	}
}

// row checks the current record and reads it into t.
func (r *relReader) row(t *tuple) bool {
	file, rel, rec := r.file, r.rel, r.csv.fields
	errs := &r.errs
	if len(rec) != r.nfields {
		// Point at the first extra field, or at the row's start.
		p := r.fpos(0)
		if len(rec) > r.nfields {
			p = r.fpos(r.nfields)
		}
		errs.AddIn(r.recordSrc(), file, p, "row has %d fields, the header has %d", len(rec), r.nfields)
		return false
	}
	ok := true
	if r.timesOnly {
		return r.times(t, nil, ok)
	}
	key := r.vecs.key(rec, r.attrCol)
	if vals, hit := r.vecs.lookup(key); hit {
		// The same attribute fields as a good row before: the same
		// values, already checked (their bytes too). The times are the
		// row's own.
		for _, i := range [2]int{r.fromCol, r.toCol} {
			if i < 0 {
				continue // an event's: at only
			}
			if msg := badBytes(rec[i]); msg != "" {
				errs.Add(file, r.fpos(i), "value %s", msg)
				ok = false
			}
		}
		return ok && r.times(t, vals, ok)
	}
	for i, f := range rec {
		if msg := badBytes(f); msg != "" {
			errs.Add(file, r.fpos(i), "value %s", msg)
			ok = false
		}
	}
	if !ok {
		return false
	}
	n := len(rel.Attrs)
	if len(r.slab) < n {
		r.slabRows = min(max(2*r.slabRows, 8), 256)
		r.slab = make([]algebra.Value, r.slabRows*n)
	}
	vals := r.slab[:n:n]
	for ai, a := range rel.Attrs {
		i := r.attrCol[ai]
		v, err := r.parsers[ai].parse(rec[i], r.in)
		if err != nil {
			errs.AddIn(r.recordSrc(), file, r.fpos(i), "%s: %v", a.Name, err)
			ok = false
			continue
		}
		vals[ai] = v
	}
	if !r.times(t, vals, ok) {
		return false
	}
	r.slab = r.slab[n:]
	r.vecs.add(key, vals)
	return true
}

// times reads the current record's times into t with vals; ok says
// whether the values were good.
func (r *relReader) times(t *tuple, vals []algebra.Value, ok bool) bool {
	file, rel, rec := r.file, r.rel, r.csv.fields
	errs := &r.errs
	parseT := func(i int, name string) (algebra.Time, bool, bool) {
		f := rec[i]
		if len(bytes.TrimSpace(f)) == 0 {
			return 0, true, true
		}
		tm, err := parseTime(f)
		if err != nil {
			errs.AddIn(r.recordSrc(), file, r.fpos(i), "%s: %v", name, err)
			return 0, false, false
		}
		return tm, false, true
	}
	good := false
	if rel.IsEvent() {
		at, empty, tGood := parseT(r.fromCol, "at")
		switch {
		case !tGood:
		case empty:
			errs.AddIn(r.recordSrc(), file, r.fpos(r.fromCol), "at: an event needs a time")
		case at == algebra.Forever:
			errs.AddIn(r.recordSrc(), file, r.fpos(r.fromCol), "at: an event cannot happen at forever")
		case ok:
			*t = tuple{vals: vals, from: at, to: algebra.Next(at)}
			good = true
		}
	} else {
		from, fEmpty, fGood := parseT(r.fromCol, "from")
		to, tEmpty, tGood := parseT(r.toCol, "to")
		if fGood && fEmpty {
			errs.AddIn(r.recordSrc(), file, r.fpos(r.fromCol), "from: an interval needs a start time")
			fGood = false
		}
		if tEmpty {
			to = algebra.Forever // still open
		}
		if fGood && tGood && ok {
			switch {
			case to < from:
				errs.AddIn(r.recordSrc(), file, r.fpos(r.toCol), "to (%s) is before from (%s)", rec[r.toCol], rec[r.fromCol])
			case to == from:
				errs.AddIn(r.recordSrc(), file, r.fpos(r.toCol), "to equals from (%s): an interval must not be empty", rec[r.fromCol])
			default:
				*t = tuple{vals: vals, from: from, to: to}
				good = true
			}
		}
	}
	if good && r.states != nil {
		if r.nrows > 0 && t.from < r.lastFrom {
			r.states = nil // out of order: the stream fails here
		} else {
			good = r.states.check(vals[0].S, stateRow{from: t.from, to: t.to, pos: r.fpos(r.fromCol), idx: r.nrows}, &r.errs)
		}
	}
	if good {
		r.nrows++
		r.lastFrom = t.from
	}
	return good
}

// err is what reading found wrong: nil, a read error, or the diagnostics
// (at most maxErrors and a last one saying there were more).
func (r *relReader) err() error {
	if r.fatal != nil {
		return r.fatal
	}
	errs := r.errs
	if len(errs) > maxErrors || r.header && len(errs) >= maxErrors {
		errs = errs[:maxErrors] // a row may add several
		errs.AddIn(r.recordSrc(), r.file, source.Pos{}, "too many errors; stopped")
	}
	return errs.Err()
}

// badText says what is wrong with a field that is not text tqmon accepts:
// invalid UTF-8 or a NUL byte; "" when it is fine.
func badText(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "holds a NUL byte"
	}
	return ""
}

// badBytes is badText of a field's bytes.
func badBytes(b []byte) string {
	for _, c := range b {
		if c == 0 || c >= utf8.RuneSelf {
			return badText(string(b))
		}
	}
	return ""
}

// clip prepares a name from a file for a message: cut to 40 characters,
// and quoted when it holds anything unprintable (an escape sequence must
// not reach the terminal).
func clip(s string) string {
	const max = 40
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "…"
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// anyKnownColumn reports whether the header names at least one of the
// relation's columns.
func anyKnownColumn(rel *algebra.Relation, timeCols []string, header []string) bool {
	for i, name := range header {
		name = strings.TrimSpace(name)
		if i == 0 {
			name = strings.TrimPrefix(name, "\ufeff")
		}
		if rel.AttrIndex(name) >= 0 || slices.Contains(timeCols, name) {
			return true
		}
	}
	return false
}

func classWord(r *algebra.Relation) string {
	if r.IsEvent() {
		return "event"
	}
	return "interval"
}

func describeColumns(rel *algebra.Relation, timeCols []string) string {
	var names []string
	for _, a := range rel.Attrs {
		names = append(names, a.Name)
	}
	names = append(names, timeCols...)
	return strings.Join(names, ",")
}

// ParseValue reads an attribute value written in a CSV field.
func ParseValue(s string, t algebra.Type) (algebra.Value, error) {
	switch t.Kind {
	case algebra.KindEntity:
		if strings.TrimSpace(s) == "" {
			return algebra.Value{}, fmt.Errorf("empty %s identifier", t.Entity)
		}
		return algebra.Entity(s), nil
	case algebra.KindEnum:
		v, ok := t.Enum.Value(s)
		if !ok {
			return v, fmt.Errorf("%q is not a member of %s", s, t)
		}
		return v, nil
	case algebra.KindString:
		return algebra.Str(s), nil
	case algebra.KindInt:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return algebra.Value{}, fmt.Errorf("%q is not an int", s)
		}
		return algebra.Int(n), nil
	case algebra.KindFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return algebra.Value{}, fmt.Errorf("%q is not a float", s)
		}
		return algebra.Float(f), nil
	case algebra.KindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return algebra.Value{}, fmt.Errorf("%q is not a bool (true or false)", s)
		}
		return algebra.Bool(b), nil
	case algebra.KindTime:
		tm, err := algebra.ParseTime(strings.TrimSpace(s))
		if err != nil {
			return algebra.Value{}, err
		}
		return algebra.TimeVal(tm), nil
	case algebra.KindDuration:
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return algebra.Value{}, fmt.Errorf("%q is not a duration (e.g. 1.5s, 10ms, 1h2m)", s)
		}
		return algebra.DurationVal(int64(d)), nil
	}
	return algebra.Value{}, fmt.Errorf("unsupported type %s", t)
}

// FormatValue writes an attribute value as ParseValue reads it.
func FormatValue(v algebra.Value, tf algebra.TimeFormat) string {
	return v.Format(tf)
}
