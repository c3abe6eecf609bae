package history

import (
	"bytes"
	"encoding/csv"
	"errors"
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
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/sensor"
)

// maxErrors caps the diagnostics collected from one CSV file.
const maxErrors = 20

// Load reads a history directory. Errors are positioned (source.ErrorList)
// where they concern a file's content.
func Load(dir string) (*algebra.History, error) {
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
	h := algebra.NewHistory(cat)
	var errs source.ErrorList
	sort.Strings(csvs)
	for _, name := range csvs {
		base := strings.TrimSuffix(name, ".csv")
		if base == "observation" {
			w, err := readWindow(filepath.Join(dir, name))
			if err != nil {
				errs = append(errs, source.Diagnostics(err)...)
				continue
			}
			h.Window = w
			continue
		}
		if !isIdent(base) {
			// Not a relation's file (e.g. an expected result, x.expected.csv).
			continue
		}
		rel := cat.Lookup(base)
		path := filepath.Join(dir, name)
		if err := regularFile(path); err != nil {
			if rel == nil {
				continue // not a relation's file, and no file at all
			}
			return nil, fmt.Errorf("history %s: %s's file %w", dir, rel.Name, err)
		}
		if rel == nil {
			// Not read: a file that is no relation's history is not echoed.
			errs.Add(path, source.Pos{Line: 1, Col: 1}, "no relation %s in %s", base, specPath)
			continue
		}
		data, err := readFile(path)
		if err != nil {
			return nil, err
		}
		if err := ReadCSV(path, data, h.Table(rel.Name)); err != nil {
			errs = append(errs, source.Diagnostics(err)...)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return h, nil
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

// regularFile checks that path (after symbolic links) is a regular file:
// a directory, named pipe, device or socket is an error naming what it is,
// never read (a pipe would block, a device may never end).
func regularFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch m := fi.Mode(); {
	case m.IsDir():
		what = "a directory"
	case m&os.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&os.ModeSocket != 0:
		what = "a socket"
	case m&os.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%s is %s, not a regular file", filepath.Base(path), what)
}

// readFile reads a regular file of at most MaxFileSize bytes.
func readFile(path string) ([]byte, error) {
	if err := regularFile(path); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
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
	f, err := sdl.Parse(path, string(text))
	if err != nil {
		return nil, err
	}
	return sensor.Compile(f)
}

// ReadCSV reads one relation's CSV into t, appending tuples. file names the
// source in diagnostics. They carry data as their text, to show their line,
// except those about text that may not be a history at all (over-long
// lines, bytes that are not UTF-8 or NUL, a first line naming none of the
// relation's columns): those do not echo it.
func ReadCSV(file string, data []byte, t *algebra.Table) error {
	rel := t.Rel
	src := source.NewFile(file, string(data))
	var errs source.ErrorList
	lines := bytes.Split(data, []byte("\n"))
	pos := func(line, byteCol int) source.Pos {
		col := byteCol
		if line >= 1 && line <= len(lines) && byteCol >= 1 {
			l := lines[line-1]
			if byteCol-1 <= len(l) {
				col = utf8.RuneCount(l[:byteCol-1]) + 1
			} else {
				// Past the end of the line (an error at the end of the
				// input): point just after its last character.
				col = utf8.RuneCount(l) + 1
			}
		}
		return source.Pos{Line: line, Col: col}
	}
	for i, l := range lines {
		if len(l) > MaxLine {
			return source.Errorf(file, source.Pos{Line: i + 1, Col: 1}, "line %d is longer than %d bytes, the most a history line may be", i+1, MaxLine)
		}
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.ReuseRecord = false
	header, err := r.Read()
	if err == io.EOF {
		return src.Errorf(source.Pos{Line: 1, Col: 1}, "empty file: expected a header row")
	}
	if err != nil {
		return csvError(src, err, pos)
	}
	// Map header columns to attributes and time columns.
	timeCols := []string{"from", "to"}
	if rel.IsEvent() {
		timeCols = []string{"at"}
	}
	col := map[string]int{}
	hpos := func(i int) source.Pos {
		l, c := r.FieldPos(i)
		return pos(l, c)
	}
	if !anyKnownColumn(rel, timeCols, header) {
		// Not this relation's history at all (perhaps not a CSV file):
		// say so without echoing what the file holds.
		return source.Errorf(file, source.Pos{Line: 1, Col: 1}, "not a history of %s: the first line names none of its columns (%s)", rel.Name, describeColumns(rel, timeCols))
	}
	for i, name := range header {
		name = strings.TrimSpace(name)
		if i == 0 {
			name = strings.TrimPrefix(name, "\ufeff")
		}
		if msg := badText(name); msg != "" {
			errs.Add(file, hpos(i), "column name %s", msg)
			continue
		}
		if name == "" {
			errs.AddIn(src, file, hpos(i), "empty column name: %s has %s", rel.Name, describeColumns(rel, timeCols))
			continue
		}
		if p, dup := col[name]; dup {
			errs.AddIn(src, file, hpos(i), "column %s appears twice (also column %d)", name, p+1)
			continue
		}
		known := rel.AttrIndex(name) >= 0
		for _, tc := range timeCols {
			known = known || name == tc
		}
		if !known {
			errs.AddIn(src, file, hpos(i), "unknown column %s: %s has %s", clip(name), rel.Name, describeColumns(rel, timeCols))
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
	if len(errs) > maxErrors {
		errs = errs[:maxErrors]
		errs.AddIn(src, file, source.Pos{}, "too many errors; stopped")
	}
	if len(errs) > 0 {
		return errs
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			errs = append(errs, csvError(src, err, pos))
			if len(errs) >= maxErrors {
				break
			}
			continue
		}
		fpos := func(i int) source.Pos {
			l, c := r.FieldPos(i)
			return pos(l, c)
		}
		if len(rec) != len(header) {
			// Point at the first extra field, or at the row's start.
			p := fpos(0)
			if len(rec) > len(header) {
				p = fpos(len(header))
			}
			errs.AddIn(src, file, p, "row has %d fields, the header has %d", len(rec), len(header))
			if len(errs) >= maxErrors {
				break
			}
			continue
		}
		vals := make([]algebra.Value, len(rel.Attrs))
		ok := true
		for i, f := range rec {
			if msg := badText(f); msg != "" {
				errs.Add(file, fpos(i), "value %s", msg)
				ok = false
			}
		}
		if !ok {
			if len(errs) >= maxErrors {
				break
			}
			continue
		}
		for ai, a := range rel.Attrs {
			i := col[a.Name]
			v, err := ParseValue(rec[i], a.Type)
			if err != nil {
				errs.AddIn(src, file, fpos(i), "%s: %v", a.Name, err)
				ok = false
				continue
			}
			vals[ai] = v
		}
		parseT := func(name string) (algebra.Time, bool, bool) {
			i := col[name]
			s := strings.TrimSpace(rec[i])
			if s == "" {
				return 0, true, true
			}
			tm, err := algebra.ParseTime(s)
			if err != nil {
				errs.AddIn(src, file, fpos(i), "%s: %v", name, err)
				return 0, false, false
			}
			return tm, false, true
		}
		if rel.IsEvent() {
			at, empty, good := parseT("at")
			switch {
			case !good:
			case empty:
				errs.AddIn(src, file, fpos(col["at"]), "at: an event needs a time")
			case at == algebra.Forever:
				errs.AddIn(src, file, fpos(col["at"]), "at: an event cannot happen at forever")
			case ok:
				t.AddEvent(vals, at)
			}
		} else {
			from, fEmpty, fGood := parseT("from")
			to, tEmpty, tGood := parseT("to")
			if fGood && fEmpty {
				errs.AddIn(src, file, fpos(col["from"]), "from: an interval needs a start time")
				fGood = false
			}
			if tEmpty {
				to = algebra.Forever // still open
			}
			if fGood && tGood && ok {
				switch {
				case to < from:
					errs.AddIn(src, file, fpos(col["to"]), "to (%s) is before from (%s)", rec[col["to"]], rec[col["from"]])
				case to == from:
					errs.AddIn(src, file, fpos(col["to"]), "to equals from (%s): an interval must not be empty", rec[col["from"]])
				default:
					t.Add(vals, from, to)
				}
			}
		}
		if len(errs) >= maxErrors {
			break
		}
	}
	if len(errs) >= maxErrors {
		errs = errs[:maxErrors] // a row may add several
		errs.AddIn(src, file, source.Pos{}, "too many errors; stopped")
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

func csvError(src *source.File, err error, pos func(int, int) source.Pos) *source.Error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return src.Errorf(pos(pe.Line, pe.Column), "%v", pe.Err)
	}
	return src.Errorf(source.Pos{}, "%v", err)
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
