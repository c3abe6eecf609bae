package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// csvReader reads CSV records from a stream as encoding/csv's Reader does
// (FieldsPerRecord -1, no comments, no lazy quotes: the same records, the
// same errors at the same places), without holding more than one record:
// a line longer than MaxLine, or a record (one with a quoted field over
// several lines) longer than MaxRecord, is an error before it is held
// whole. Fields are slices of its buffer, valid until the next record:
// unquoted fields point into the line itself, quoted ones into a reused
// buffer. Nothing is allocated per record once the buffers have grown.
type csvReader struct {
	r       io.Reader
	buf     []byte
	start   int   // where unread data begins in buf
	end     int   // where it ends
	recOff  int   // where the current record's first line begins in buf
	eof     bool  // r has no more data
	readErr error // an error reading r (not io.EOF)
	filled  bool  // the last read filled buf
	numLine int   // lines read, as encoding/csv counts them

	// The current record.
	recLine   int // its first line
	quoted    []byte
	fields    [][]byte
	positions []csvPos
}

// csvPos is a field's position: its line and byte column, 1-based.
type csvPos struct{ line, col int }

// MaxRecord is the longest CSV record a history file may have: a record
// is one line unless a quoted field holds line breaks.
const MaxRecord = MaxLine

// errLineTooLong and errRecordTooLong end a file's reading: the line or
// record at csvReader.numLine+1 (errLineTooLong) or from
// csvReader.recLine (errRecordTooLong) is not read.
var (
	errLineTooLong   = errors.New("line too long")
	errRecordTooLong = errors.New("record too long")
)

// errBareQuote and errQuote are encoding/csv's ErrBareQuote and ErrQuote.
var (
	errBareQuote = errors.New("bare \" in non-quoted-field")
	errQuote     = errors.New("extraneous or missing \" in quoted-field")
)

// csvError is a record's syntax error at a line and byte column.
type csvError struct {
	line, col int
	err       error
}

func (e *csvError) Error() string { return fmt.Sprintf("%d:%d: %v", e.line, e.col, e.err) }

// csvBufFirst and csvBufRead are the reader's buffer as it starts and as
// reading grows it: it starts small, so a small file (most of a fuzz
// target's, many histories' event files) costs little, and doubles with
// each read that fills it up to csvBufRead — past that only a record
// longer than the buffer grows it (up to MaxRecord).
const (
	csvBufFirst = 4 << 10
	csvBufRead  = 64 << 10
)

func newCSVReader(r io.Reader) *csvReader {
	return &csvReader{r: r, buf: make([]byte, csvBufFirst)}
}

// fill reads more data into buf, keeping the current record's lines
// (from recOff), growing buf when they fill it (and while reads fill it,
// up to csvBufRead). It returns false at the end of the input.
func (c *csvReader) fill() bool {
	if c.eof || c.readErr != nil {
		return false
	}
	if c.recOff > 0 {
		n := copy(c.buf, c.buf[c.recOff:c.end])
		c.start -= c.recOff
		c.end = n
		c.recOff = 0
	}
	if c.end == len(c.buf) || c.filled && len(c.buf) < csvBufRead {
		c.buf = append(c.buf, make([]byte, len(c.buf))...)
	}
	for {
		n, err := c.r.Read(c.buf[c.end:])
		c.end += n
		c.filled = c.end == len(c.buf)
		if err == io.EOF {
			c.eof = true
			return n > 0
		}
		if err != nil {
			c.readErr = err
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
}

// readLine is encoding/csv's readLine: the next line without its line
// break (a \r before the break, or before the end of the input, dropped),
// whether it had one, and io.EOF when there is no line at all. Every call
// counts a line.
func (c *csvReader) readLine() (line []byte, nl bool, err error) {
	scanned := 0
	for {
		if i := bytes.IndexByte(c.buf[c.start+scanned:c.end], '\n'); i >= 0 {
			n := scanned + i
			if n > MaxLine {
				return nil, false, errLineTooLong
			}
			line = c.buf[c.start : c.start+n]
			c.start += n + 1
			c.numLine++
			if len(line) > 0 && line[len(line)-1] == '\r' {
				line = line[:len(line)-1]
			}
			return line, true, nil
		}
		scanned = c.end - c.start
		if scanned > MaxLine {
			return nil, false, errLineTooLong
		}
		if c.start-c.recOff+scanned > MaxRecord {
			return nil, false, errRecordTooLong
		}
		if !c.fill() {
			break
		}
	}
	if c.readErr != nil {
		return nil, false, c.readErr
	}
	c.numLine++
	if c.start == c.end {
		return nil, false, io.EOF
	}
	line = c.buf[c.start:c.end]
	c.start = c.end
	if line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, false, nil
}

// read reads the next record into c.fields and c.positions, skipping
// empty lines. It returns io.EOF at the end, a *csvError for a record
// that is not well-formed CSV (the reader goes on with the next line),
// errLineTooLong or errRecordTooLong (the reader stops), or an error
// reading the input.
func (c *csvReader) read() error {
	var line []byte
	var nl bool
	var errRead error
	c.recOff = c.start
	for {
		line, nl, errRead = c.readLine()
		if errRead == nil && len(line) == 0 {
			c.recOff = c.start
			continue // Skip empty lines
		}
		break
	}
	if errRead != nil {
		return errRead
	}
	c.recLine = c.numLine
	c.quoted = c.quoted[:0]
	c.fields = c.fields[:0]
	c.positions = c.positions[:0]
	pos := csvPos{line: c.numLine, col: 1}
	if bytes.IndexByte(line, '"') < 0 {
		// The common case: no quotes, every field a slice of the line.
		for {
			i := bytes.IndexByte(line, ',')
			if i < 0 {
				c.addField(line, pos)
				return nil
			}
			c.addField(line[:i], pos)
			line = line[i+1:]
			pos.col += i + 1
		}
	}
	// lineLen is the length of line with its line break, as encoding/csv
	// holds it.
	lineLen := func() int {
		if nl {
			return len(line) + 1
		}
		return len(line)
	}
	// A record with quotes: its fields are copied into c.quoted, since
	// reading its next line may move the buffer.
	var err error
parseField:
	for {
		if len(line) == 0 || line[0] != '"' {
			// Non-quoted field.
			i := bytes.IndexByte(line, ',')
			field := line
			if i >= 0 {
				field = field[:i]
			}
			if j := bytes.IndexByte(field, '"'); j >= 0 {
				err = &csvError{line: c.numLine, col: pos.col + j, err: errBareQuote}
				break parseField
			}
			begin := len(c.quoted)
			c.quoted = append(c.quoted, field...)
			c.addQuoted(begin, pos)
			if i >= 0 {
				line = line[i+1:]
				pos.col += i + 1
				continue parseField
			}
			break parseField
		}
		// Quoted field.
		fieldPos := pos
		line = line[1:]
		pos.col++
		begin := len(c.quoted)
		for {
			i := bytes.IndexByte(line, '"')
			if i >= 0 {
				// The next quote.
				c.quoted = append(c.quoted, line[:i]...)
				line = line[i+1:]
				pos.col += i + 1
				switch rn, _ := utf8.DecodeRune(line); {
				case len(line) > 0 && rn == '"':
					// "" (a quote).
					c.quoted = append(c.quoted, '"')
					line = line[1:]
					pos.col++
				case len(line) > 0 && rn == ',':
					// ", (the end of the field).
					line = line[1:]
					pos.col++
					c.addQuoted(begin, fieldPos)
					continue parseField
				case len(line) == 0:
					// "\n (the end of the line).
					c.addQuoted(begin, fieldPos)
					break parseField
				default:
					// "* (a quote not escaped).
					err = &csvError{line: c.numLine, col: pos.col - 1, err: errQuote}
					break parseField
				}
			} else if lineLen() > 0 {
				// The end of the line: the field goes on.
				c.quoted = append(c.quoted, line...)
				if nl {
					c.quoted = append(c.quoted, '\n')
				}
				pos.col += lineLen()
				line, nl, errRead = c.readLine()
				if errRead == io.EOF {
					errRead = nil
				}
				if errRead != nil {
					return errRead
				}
				if lineLen() > 0 {
					pos.line++
					pos.col = 1
				}
			} else {
				// The end of the input inside a quoted field.
				err = &csvError{line: pos.line, col: pos.col, err: errQuote}
				break parseField
			}
		}
	}
	return err
}

// addField appends a field that is a slice of the line.
func (c *csvReader) addField(f []byte, p csvPos) {
	c.fields = append(c.fields, f)
	c.positions = append(c.positions, p)
}

// addQuoted appends the field held in c.quoted from begin.
func (c *csvReader) addQuoted(begin int, p csvPos) {
	c.fields = append(c.fields, c.quoted[begin:len(c.quoted):len(c.quoted)])
	c.positions = append(c.positions, p)
}

// recordText is the text of the current record's lines, as they are in
// the input (valid until the next read).
func (c *csvReader) recordText() []byte {
	return c.buf[c.recOff:c.start]
}
