package algebra

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Time is a point on the global clock: nanoseconds since the Unix epoch. A
// chronon is one nanosecond. Beginning and Forever are the first and the
// last chronon of the time line; an interval still open has To = Forever.
//
// Forever is one below math.MaxInt64 so that every chronon t, Forever
// included, has its event [t, Next(t)) with Next(t) > t: the event at
// forever is [Forever, Next(Forever)) like every other event. Next(Forever)
// = math.MaxInt64 is no chronon — it only ever ends an event at forever, or
// an interval extended by one — and no time is read past Forever.
type Time = int64

const (
	Beginning Time = math.MinInt64
	Forever   Time = math.MaxInt64 - 1
)

// Next is the chronon after t: an event at t occupies [t, Next(t)). Next
// of Forever is the exclusive end of the time line, math.MaxInt64, where
// Next saturates.
func Next(t Time) Time {
	if t == math.MaxInt64 {
		return t
	}
	return t + 1
}

// Prev is the chronon before t, saturating at Beginning.
func Prev(t Time) Time {
	if t == Beginning {
		return Beginning
	}
	return t - 1
}

// Clamp brings an end stamp onto the time line: Next(Forever), the end of
// an event at forever, is forever. An event at the end of [b, Next(Forever))
// is the event at forever, and a result interval ends at forever at the
// latest (an open tuple).
func Clamp(t Time) Time { return min(t, Forever) }

// Mid is a time halfway between lo and hi (lo ≤ hi), rounded down, without
// overflow however far apart they are.
func Mid(lo, hi Time) Time { return lo + Time((uint64(hi)-uint64(lo))/2) }

// TimeFormat says how times are printed.
type TimeFormat uint8

const (
	// TimeClock prints H:MM:SS[.fraction], an offset from the epoch with
	// unbounded hours and trailing zeros of the fraction trimmed.
	TimeClock TimeFormat = iota
	// TimeRFC3339 prints RFC 3339 in UTC with as many fraction digits as needed.
	TimeRFC3339
	// TimeNS prints integer nanoseconds since the epoch.
	TimeNS
	// TimeAuto prints wall-clock times — a year or more from the epoch —
	// as TimeRFC3339, and the others, a subject's own clock from zero, as
	// TimeClock.
	TimeAuto
)

// TimeLocal, or'ed into TimeRFC3339 or TimeAuto (see WithTZ), prints RFC
// 3339 times in the local time zone instead of UTC.
const TimeLocal TimeFormat = 0x80

// IsWallClock reports whether TimeAuto takes t for a wall-clock time
// (RFC 3339; else a subject's own clock, H:MM:SS).
func IsWallClock(t Time) bool { return t >= wallClockFrom || t <= -wallClockFrom }

// wallClockFrom is where TimeAuto takes a time for a wall-clock time: a
// year from the epoch (no subject's own clock runs that long, and no
// wall clock reads that early).
const wallClockFrom = 365 * 24 * Time(time.Hour)

// WithTZ is f printing RFC 3339 times in the zone tz names: "utc" (or "")
// or "local" (the TZ environment variable's, else the system's). Only
// TimeRFC3339 and TimeAuto print zones; the others are returned as they
// are.
func WithTZ(f TimeFormat, tz string) (TimeFormat, error) {
	switch tz {
	case "", "utc", "UTC":
		return f &^ TimeLocal, nil
	case "local":
		if b := f &^ TimeLocal; b == TimeRFC3339 || b == TimeAuto {
			return b | TimeLocal, nil
		}
		return f, nil
	}
	return f, fmt.Errorf("unknown time zone %q (want utc or local)", tz)
}

// ParseTimeFormat reads a --time-format value.
func ParseTimeFormat(s string) (TimeFormat, error) {
	switch s {
	case "clock":
		return TimeClock, nil
	case "rfc3339":
		return TimeRFC3339, nil
	case "ns":
		return TimeNS, nil
	case "auto":
		return TimeAuto, nil
	}
	return 0, fmt.Errorf("unknown time format %q (want auto, clock, rfc3339 or ns)", s)
}

func (f TimeFormat) String() string {
	switch f &^ TimeLocal {
	case TimeClock:
		return "clock"
	case TimeRFC3339:
		return "rfc3339"
	case TimeNS:
		return "ns"
	case TimeAuto:
		return "auto"
	}
	return "?"
}

// FormatTime prints t; the infinities print as "beginning" and "forever" in
// every format.
func FormatTime(t Time, f TimeFormat) string {
	switch t {
	case Beginning:
		return "beginning"
	case Forever:
		return "forever"
	}
	var b [48]byte
	return string(AppendTime(b[:0], t, f))
}

// AppendTime appends t as FormatTime prints it (allocating nothing when b
// has room).
func AppendTime(b []byte, t Time, f TimeFormat) []byte {
	switch t {
	case Beginning:
		return append(b, "beginning"...)
	case Forever:
		return append(b, "forever"...)
	}
	loc := time.UTC
	if f&TimeLocal != 0 {
		loc = time.Local
	}
	switch f &^ TimeLocal {
	case TimeAuto:
		if IsWallClock(t) {
			return time.Unix(0, t).In(loc).AppendFormat(b, time.RFC3339Nano)
		}
	case TimeRFC3339:
		return time.Unix(0, t).In(loc).AppendFormat(b, time.RFC3339Nano)
	case TimeNS:
		return strconv.AppendInt(b, t, 10)
	}
	return appendClock(b, t)
}

// appendClock appends t in clock notation, H:MM:SS[.fraction].
func appendClock(b []byte, t Time) []byte {
	u := uint64(t)
	if t < 0 {
		b = append(b, '-')
		u = uint64(-t) // t > Beginning here, so -t does not overflow
	}
	const sec = uint64(time.Second)
	s := u / sec
	frac := u % sec
	b = strconv.AppendUint(b, s/3600, 10)
	for _, x := range []uint64{s / 60 % 60, s % 60} {
		b = append(b, ':', byte('0'+x/10), byte('0'+x%10))
	}
	return AppendFraction(b, frac)
}

// AppendFraction appends ns (< 1e9), if not 0, as a decimal fraction of a
// second without trailing zeros: ".5", ".000000001".
func AppendFraction(b []byte, ns uint64) []byte {
	if ns == 0 {
		return b
	}
	var d [10]byte
	d[0] = '.'
	for i := 9; i > 0; i-- {
		d[i] = byte('0' + ns%10)
		ns /= 10
	}
	k := 10
	for d[k-1] == '0' {
		k--
	}
	return append(b, d[:k]...)
}

// ErrBadTime is wrapped by every time-parsing error.
var ErrBadTime = errors.New("bad time")

// ParseTime reads a time written as "beginning", "forever", integer
// nanoseconds since the epoch, RFC 3339, or clock notation H:MM:SS[.fraction]
// (an offset from the epoch, hours unbounded, optionally negative). "now" is
// not handled here: its meaning depends on the caller.
func ParseTime(s string) (Time, error) {
	switch strings.ToLower(s) {
	case "beginning":
		return Beginning, nil
	case "forever":
		return Forever, nil
	}
	if s == "" {
		return 0, fmt.Errorf("%w: empty", ErrBadTime)
	}
	if isInteger(s) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %q is out of range", ErrBadTime, s)
		}
		if n == Beginning || n >= Forever {
			return 0, fmt.Errorf("%w: %q is reserved for beginning/forever", ErrBadTime, s)
		}
		return n, nil
	}
	// Clock notation has two colons and no date: no T, Z, space or sign
	// after the leading minus (those are RFC 3339 or mistakes for it).
	if strings.Count(s, ":") == 2 && !strings.ContainsAny(strings.TrimPrefix(s, "-"), "TtZz -+") {
		return parseClock(s)
	}
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not beginning, forever, integer nanoseconds, H:MM:SS[.fraction] or RFC 3339", ErrBadTime, s)
	}
	// UnixNano is undefined outside the int64 range; its two ends stand for
	// beginning and forever.
	if tm.Before(minTime) || tm.After(maxTime) {
		return 0, fmt.Errorf("%w: %q is outside the representable range (%s to %s)", ErrBadTime, s,
			minTime.Format(time.RFC3339Nano), maxTime.Format(time.RFC3339Nano))
	}
	return tm.UnixNano(), nil
}

// The finite times an RFC 3339 text may name.
var (
	minTime = time.Unix(0, Beginning+1).UTC()
	maxTime = time.Unix(0, Forever-1).UTC()
)

func isInteger(s string) bool {
	i := 0
	if s[0] == '-' || s[0] == '+' {
		i = 1
	}
	if i == len(s) {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func parseClock(s string) (Time, error) {
	bad := func(why string) (Time, error) {
		return 0, fmt.Errorf("%w: %q: %s (clock notation is H:MM:SS[.fraction])", ErrBadTime, s, why)
	}
	neg := false
	body := s
	if strings.HasPrefix(body, "-") {
		neg = true
		body = body[1:]
	}
	parts := strings.Split(body, ":")
	h, m, sec := parts[0], parts[1], parts[2]
	frac := ""
	if i := strings.IndexByte(sec, '.'); i >= 0 {
		sec, frac = sec[:i], sec[i+1:]
		if frac == "" {
			return bad("empty fraction")
		}
	}
	if h == "" || !allDigits(h) {
		return bad("hours must be digits")
	}
	if len(m) != 2 || !allDigits(m) {
		return bad("minutes must be two digits")
	}
	if len(sec) != 2 || !allDigits(sec) {
		return bad("seconds must be two digits")
	}
	if frac != "" && (!allDigits(frac) || len(frac) > 9) {
		return bad("fraction must be 1 to 9 digits")
	}
	hh, err := strconv.ParseUint(h, 10, 64)
	if err != nil || hh > uint64(math.MaxInt64/int64(time.Hour)) {
		return bad("hours out of range")
	}
	mm, _ := strconv.Atoi(m)
	ss, _ := strconv.Atoi(sec)
	if mm > 59 {
		return bad("minutes must be below 60")
	}
	if ss > 59 {
		return bad("seconds must be below 60")
	}
	ns := int64(0)
	if frac != "" {
		f := frac + strings.Repeat("0", 9-len(frac))
		ns, _ = strconv.ParseInt(f, 10, 64)
	}
	// hh·1h fits in an int64; the rest may not.
	t := uint64(hh)*uint64(time.Hour) + uint64(mm)*uint64(time.Minute) + uint64(ss)*uint64(time.Second) + uint64(ns)
	switch {
	case t > math.MaxInt64:
		return bad("out of range")
	case t >= uint64(Forever) && !neg:
		return 0, fmt.Errorf("%w: %q is reserved for beginning/forever", ErrBadTime, s)
	}
	if neg {
		return -int64(t), nil
	}
	return int64(t), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

// FormatDuration prints a duration in Go's notation (1h2m3.5s), which the
// TQuel lexer reads back.
func FormatDuration(d int64) string {
	return time.Duration(d).String()
}
