package format

import (
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tqmon/tqmon/algebra"
)

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

// appendValue appends v as v.Format(tf) writes it.
func (c *texts) appendValue(b []byte, v algebra.Value, tf algebra.TimeFormat) []byte {
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

// appendTime appends t as algebra.FormatTime(t, tf) writes it.
func (c *texts) appendTime(b []byte, t algebra.Time, tf algebra.TimeFormat) []byte {
	local := tf&algebra.TimeLocal != 0
	if t == algebra.Beginning || t == algebra.Forever || !rfc3339(t, tf) {
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

// appendCSV appends one CSV field as encoding/csv writes it (comma
// separated, lines ending in \n): quoted when it holds a comma, a quote or
// a line break, begins with a space, or is `\.`, quotes doubled.
func appendCSV(b []byte, f string) []byte {
	if !csvQuotes(f) {
		return append(b, f...)
	}
	b = append(b, '"')
	for i := 0; i < len(f); i++ {
		if f[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, f[i])
	}
	return append(b, '"')
}

// csvQuotes is encoding/csv's fieldNeedsQuotes for a comma.
func csvQuotes(f string) bool {
	if f == "" {
		return false
	}
	if f == `\.` {
		return true
	}
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case '\n', '\r', '"', ',':
			return true
		}
	}
	r, _ := utf8.DecodeRuneInString(f)
	return unicode.IsSpace(r)
}
