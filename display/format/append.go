package format

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tqmon/tqmon/algebra"
)

// The row writers below append a row's bytes to a buffer, which each
// writer reuses: a row allocates nothing for strings, ints and times in
// integer nanoseconds or RFC 3339. They write exactly what they replace
// did — encoding/csv's Writer (',' and "\n") over Row's strings, and
// encoding/json's Marshal of each field — which TestAppendAgrees checks
// against those over values chosen to need every escape.

// appendValue appends v as v.Format(tf) writes it (c caches the text of
// an RFC 3339 time's whole second; nil: none).
func appendValue(b []byte, v algebra.Value, tf algebra.TimeFormat, c *texts) []byte {
	switch v.K {
	case algebra.KindEntity, algebra.KindEnum, algebra.KindString:
		return append(b, v.S...)
	case algebra.KindInt:
		return strconv.AppendInt(b, v.N, 10)
	case algebra.KindTime:
		return c.appendTime(b, v.N, tf)
	}
	return append(b, v.Format(tf)...)
}

// texts appends values and times as Row formats them, without a string
// per value: a stream writes each row into one reused buffer. An RFC 3339
// time reuses the text of its whole second, which consecutive rows
// mostly share (time.Time.AppendFormat took a third of a kernel
// consumer's formatting).
type texts struct {
	sec          int64  // the whole second cached (valid when len(pre) > 0)
	local        bool   // its zone
	pre, zoneTxt []byte // its text up to the seconds, and its zone's
}

// appendTime appends t as algebra.FormatTime(t, tf) writes it.
func (c *texts) appendTime(b []byte, t algebra.Time, tf algebra.TimeFormat) []byte {
	local := tf&algebra.TimeLocal != 0
	if c == nil || t == algebra.Beginning || t == algebra.Forever || !rfc3339(t, tf) {
		return algebra.AppendTime(b, t, tf)
	}
	sec, ns := t/1e9, t%1e9
	if ns < 0 {
		sec, ns = sec-1, ns+1e9
	}
	if len(c.pre) == 0 || c.sec != sec || c.local != local {
		loc := time.UTC
		if local {
			loc = time.Local
		}
		whole := time.Unix(sec, 0).In(loc).AppendFormat(c.pre[:0], time.RFC3339Nano)
		// "2006-01-02T15:04:05" then the zone; any other shape (a year
		// past 9999) is formatted whole each time.
		if len(whole) < 20 || whole[10] != 'T' || whole[19] != 'Z' && whole[19] != '+' && whole[19] != '-' {
			c.pre = c.pre[:0]
			return algebra.AppendTime(b, t, tf)
		}
		c.sec, c.local = sec, local
		c.zoneTxt = append(c.zoneTxt[:0], whole[19:]...)
		c.pre = whole[:19]
	}
	b = append(b, c.pre...)
	b = algebra.AppendFraction(b, uint64(ns))
	return append(b, c.zoneTxt...)
}

// rfc3339 reports whether FormatTime writes t in RFC 3339.
func rfc3339(t algebra.Time, tf algebra.TimeFormat) bool {
	switch tf &^ algebra.TimeLocal {
	case algebra.TimeRFC3339:
		return true
	case algebra.TimeAuto:
		return algebra.IsWallClock(t)
	}
	return false
}

// rowWriter appends rows of a relation as CSV records or JSON objects.
type rowWriter struct {
	rel   *algebra.Relation
	tf    algebra.TimeFormat
	field []byte // a CSV field being formatted
	texts texts  // the text of the last RFC 3339 second
}

// csvRow appends t as a CSV record, Row's fields (an open end empty),
// after prefix as a first field when it is not "".
func (rw *rowWriter) csvRow(b []byte, prefix string, t *algebra.Tuple) []byte {
	if prefix != "" {
		b = appendCSVField(b, append(rw.field[:0], prefix...))
		b = append(b, ',')
	}
	for _, v := range t.Vals {
		rw.field = appendValue(rw.field[:0], v, rw.tf, &rw.texts)
		b = appendCSVField(b, rw.field)
		b = append(b, ',')
	}
	rw.field = rw.texts.appendTime(rw.field[:0], t.From, rw.tf)
	b = appendCSVField(b, rw.field)
	if !rw.rel.IsEvent() {
		b = append(b, ',')
		if t.To != algebra.Forever {
			rw.field = rw.texts.appendTime(rw.field[:0], t.To, rw.tf)
			b = appendCSVField(b, rw.field)
		}
	}
	return append(b, '\n')
}

// csvRecord appends fields as a CSV record.
func (rw *rowWriter) csvRecord(b []byte, fields []string) []byte {
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCSVField(b, append(rw.field[:0], f...))
	}
	return append(b, '\n')
}

// appendCSVField appends f as encoding/csv's Writer writes a field:
// quoted when it holds a comma, a quote or a line break, begins with a
// space, or is `\.`; quotes inside doubled.
func appendCSVField(b, f []byte) []byte {
	if !csvNeedsQuotes(f) {
		return append(b, f...)
	}
	b = append(b, '"')
	for _, c := range f {
		if c == '"' {
			b = append(b, '"')
		}
		b = append(b, c)
	}
	return append(b, '"')
}

func csvNeedsQuotes(f []byte) bool {
	if len(f) == 0 {
		return false
	}
	if string(f) == `\.` {
		return true
	}
	for _, c := range f {
		if c == '\n' || c == '\r' || c == '"' || c == ',' {
			return true
		}
	}
	r, _ := utf8.DecodeRune(f)
	return unicode.IsSpace(r)
}

// jsonRow appends t as a JSON object and a line break: "relation" (unless
// name is ""), the attributes, then at or from and to.
func (rw *rowWriter) jsonRow(b []byte, name string, t *algebra.Tuple) []byte {
	rel, tf := rw.rel, rw.tf
	b = append(b, '{')
	key := func(k string) {
		if len(b) > 0 && b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
	}
	timeVal := func(t algebra.Time) {
		if tf == algebra.TimeNS && t != algebra.Beginning && t != algebra.Forever {
			b = strconv.AppendInt(b, t, 10)
			return
		}
		// A time's text needs no escape: digits, letters, "-+:.".
		b = append(b, '"')
		b = rw.texts.appendTime(b, t, tf)
		b = append(b, '"')
	}
	if name != "" {
		key(relationKey(rel))
		b = appendJSONString(b, name)
	}
	for i, a := range rel.Attrs {
		key(a.Name)
		v := t.Vals[i]
		switch v.K {
		case algebra.KindInt:
			b = strconv.AppendInt(b, v.N, 10)
		case algebra.KindFloat:
			f := v.F()
			if f != f || f > 1e308 || f < -1e308 { // NaN and infinities are not JSON numbers
				b = appendJSONString(b, v.Format(tf))
			} else {
				data, _ := json.Marshal(f)
				b = append(b, data...)
			}
		case algebra.KindBool:
			b = strconv.AppendBool(b, v.B())
		case algebra.KindTime:
			timeVal(v.N)
		case algebra.KindEntity, algebra.KindEnum, algebra.KindString:
			b = appendJSONString(b, v.S)
		default:
			b = appendJSONString(b, v.Format(tf))
		}
	}
	if rel.IsEvent() {
		key("at")
		timeVal(t.From)
	} else {
		key("from")
		timeVal(t.From)
		key("to")
		if t.To == algebra.Forever {
			b = append(b, "null"...) // open
		} else {
			timeVal(t.To)
		}
	}
	return append(b, "}\n"...)
}

// appendJSONString appends s as encoding/json's Marshal writes it: as
// itself in quotes when every byte is printable ASCII that needs no
// escape (HTML's <, > and & included, which Marshal escapes), else as
// Marshal does.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			data, _ := json.Marshal(s)
			return append(b, data...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
