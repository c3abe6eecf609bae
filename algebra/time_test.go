package algebra

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	tests := []struct {
		in   string
		want Time
	}{
		{"beginning", Beginning},
		{"Forever", Forever},
		{"FOREVER", Forever},
		{"0", 0},
		{"7", 7},
		{"-7", -7},
		{"+7", 7},
		{"9223372036854775805", Forever - 1},
		{"-9223372036854775807", Beginning + 1},
		{"0:00:00", 0},
		{"2:54:20", (2*3600 + 54*60 + 20) * 1e9},
		{"0:00:01.5", 1.5e9},
		{"0:00:00.000000001", 1},
		{"0:00:00.123456789", 123456789},
		{"0:00:01.500", 1.5e9},
		{"100:00:00", 100 * 3600e9},
		{"-0:00:01.25", -1.25e9},
		{"-1:00:00", -3600e9},
		{"-0:00:00", 0},
		{"2562047:47:16.854775805", Forever - 1},
		{"-2562047:47:16.854775807", Beginning + 1},
		{"1970-01-01T00:00:00Z", 0},
		{"1970-01-01T00:00:01.5Z", 1.5e9},
		{"2026-11-21T10:00:00Z", 1795255200e9},
		{"2026-11-21T11:00:00+01:00", 1795255200e9},
		{"1969-12-31T23:59:59.999999999Z", -1},
		{"2262-04-11T23:47:16.854775805Z", Forever - 1},
		{"1677-09-21T00:12:43.145224193Z", Beginning + 1},
	}
	for _, tt := range tests {
		got, err := ParseTime(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseTimeErrors(t *testing.T) {
	const clockNote = " (clock notation is H:MM:SS[.fraction])"
	const notA = " is not beginning, forever, integer nanoseconds, H:MM:SS[.fraction] or RFC 3339"
	tests := []struct{ in, want string }{
		{"", "bad time: empty"},
		{"now", `bad time: "now"` + notA},
		{"noon", `bad time: "noon"` + notA},
		{"-", `bad time: "-"` + notA},
		{"+", `bad time: "+"` + notA},
		{"1.5", `bad time: "1.5"` + notA},
		{" 5", `bad time: " 5"` + notA},
		{"9223372036854775806", `bad time: "9223372036854775806" is reserved for beginning/forever`},
		{"9223372036854775807", `bad time: "9223372036854775807" is reserved for beginning/forever`},
		{"-9223372036854775808", `bad time: "-9223372036854775808" is reserved for beginning/forever`},
		{"9223372036854775808", `bad time: "9223372036854775808" is out of range`},
		{"1:0:00", `bad time: "1:0:00": minutes must be two digits` + clockNote},
		{"1:00:0", `bad time: "1:00:0": seconds must be two digits` + clockNote},
		{":00:00", `bad time: ":00:00": hours must be digits` + clockNote},
		{"a:00:00", `bad time: "a:00:00": hours must be digits` + clockNote},
		{"--1:00:00", `bad time: "--1:00:00"` + notA},
		{"+1:00:00", `bad time: "+1:00:00"` + notA},
		{"1 :00:00", `bad time: "1 :00:00"` + notA},
		{"1:60:00", `bad time: "1:60:00": minutes must be below 60` + clockNote},
		{"1:00:60", `bad time: "1:00:60": seconds must be below 60` + clockNote},
		{"1:00:00.", `bad time: "1:00:00.": empty fraction` + clockNote},
		{"1:00:00.1234567890", `bad time: "1:00:00.1234567890": fraction must be 1 to 9 digits` + clockNote},
		{"1:00:00.5x", `bad time: "1:00:00.5x": fraction must be 1 to 9 digits` + clockNote},
		{"1:00:00.5.5", `bad time: "1:00:00.5.5": fraction must be 1 to 9 digits` + clockNote},
		{"2562048:00:00", `bad time: "2562048:00:00": hours out of range` + clockNote},
		{"99999999999999999999:00:00", `bad time: "99999999999999999999:00:00": hours out of range` + clockNote},
		{"2562047:47:16.854775806", `bad time: "2562047:47:16.854775806" is reserved for beginning/forever`},
		{"2562047:47:16.854775807", `bad time: "2562047:47:16.854775807" is reserved for beginning/forever`},
		{"2562047:47:16.854775808", `bad time: "2562047:47:16.854775808": out of range` + clockNote},
		{"-2562047:47:16.854775808", `bad time: "-2562047:47:16.854775808": out of range` + clockNote},
		{"2026-13-01T00:00:00Z", `bad time: "2026-13-01T00:00:00Z"` + notA},
		{"2026-11-21 10:00:00", `bad time: "2026-11-21 10:00:00"` + notA},
		{"2026-11-21T10:00:00", `bad time: "2026-11-21T10:00:00"` + notA},
		{"2262-04-11T23:47:16.854775806Z", `bad time: "2262-04-11T23:47:16.854775806Z" is outside the representable range (1677-09-21T00:12:43.145224193Z to 2262-04-11T23:47:16.854775805Z)`},
		{"2262-04-11T23:47:16.854775807Z", `bad time: "2262-04-11T23:47:16.854775807Z" is outside the representable range (1677-09-21T00:12:43.145224193Z to 2262-04-11T23:47:16.854775805Z)`},
		{"1677-09-21T00:12:43.145224192Z", `bad time: "1677-09-21T00:12:43.145224192Z" is outside the representable range (1677-09-21T00:12:43.145224193Z to 2262-04-11T23:47:16.854775805Z)`},
		{"9999-01-01T00:00:00Z", `bad time: "9999-01-01T00:00:00Z" is outside the representable range (1677-09-21T00:12:43.145224193Z to 2262-04-11T23:47:16.854775805Z)`},
	}
	for _, tt := range tests {
		got, err := ParseTime(tt.in)
		if err == nil {
			t.Errorf("ParseTime(%q) = %d, want error %q", tt.in, got, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("ParseTime(%q):\n got  %s\n want %s", tt.in, err, tt.want)
		}
		if !errors.Is(err, ErrBadTime) {
			t.Errorf("ParseTime(%q): %v does not wrap ErrBadTime", tt.in, err)
		}
	}
}

func TestFormatTime(t *testing.T) {
	tests := []struct {
		t                Time
		clock, rfc, nano string
	}{
		{0, "0:00:00", "1970-01-01T00:00:00Z", "0"},
		{1, "0:00:00.000000001", "1970-01-01T00:00:00.000000001Z", "1"},
		{1.5e9, "0:00:01.5", "1970-01-01T00:00:01.5Z", "1500000000"},
		{1.25e9, "0:00:01.25", "1970-01-01T00:00:01.25Z", "1250000000"},
		{120e6, "0:00:00.12", "1970-01-01T00:00:00.12Z", "120000000"},
		{(2*3600 + 54*60 + 20) * 1e9, "2:54:20", "1970-01-01T02:54:20Z", "10460000000000"},
		{100 * 3600e9, "100:00:00", "1970-01-05T04:00:00Z", "360000000000000"},
		{-1, "-0:00:00.000000001", "1969-12-31T23:59:59.999999999Z", "-1"},
		{-3600e9 - 0.5e9, "-1:00:00.5", "1969-12-31T22:59:59.5Z", "-3600500000000"},
		{Forever - 1, "2562047:47:16.854775805", "2262-04-11T23:47:16.854775805Z", "9223372036854775805"},
		{Beginning + 1, "-2562047:47:16.854775807", "1677-09-21T00:12:43.145224193Z", "-9223372036854775807"},
		{Beginning, "beginning", "beginning", "beginning"},
		{Forever, "forever", "forever", "forever"},
	}
	for _, tt := range tests {
		for _, c := range []struct {
			f    TimeFormat
			want string
		}{{TimeClock, tt.clock}, {TimeRFC3339, tt.rfc}, {TimeNS, tt.nano}} {
			got := FormatTime(tt.t, c.f)
			if got != c.want {
				t.Errorf("FormatTime(%d, %s) = %q, want %q", tt.t, c.f, got, c.want)
			}
			back, err := ParseTime(got)
			if err != nil || back != tt.t {
				t.Errorf("ParseTime(FormatTime(%d, %s) = %q) = %d, %v", tt.t, c.f, got, back, err)
			}
		}
	}
}

func TestParseTimeFormat(t *testing.T) {
	for _, f := range []TimeFormat{TimeClock, TimeRFC3339, TimeNS, TimeAuto} {
		g, err := ParseTimeFormat(f.String())
		if err != nil || g != f {
			t.Errorf("ParseTimeFormat(%q) = %v, %v", f.String(), g, err)
		}
	}
	_, err := ParseTimeFormat("iso")
	if err == nil || err.Error() != `unknown time format "iso" (want auto, clock, rfc3339 or ns)` {
		t.Errorf("ParseTimeFormat(iso): %v", err)
	}
}

// TestTimeAuto: auto prints wall-clock times (a year or more from the
// epoch) as RFC 3339, a subject's own clock as clock notation; --tz local
// moves RFC 3339 into the local zone and leaves the other formats alone.
func TestTimeAuto(t *testing.T) {
	const wall = Time(1795000000123456789) // 2026-11-18T11:06:40Z
	for _, c := range []struct {
		t    Time
		f    TimeFormat
		want string
	}{
		{wall, TimeAuto, "2026-11-18T11:06:40.123456789Z"},
		{-wall, TimeAuto, "1913-02-13T12:53:19.876543211Z"},
		{wallClockFrom, TimeAuto, "1971-01-01T00:00:00Z"},
		{wallClockFrom - 1, TimeAuto, "8759:59:59.999999999"},
		{90 * Time(time.Minute), TimeAuto, "1:30:00"},
		{-5e8, TimeAuto, "-0:00:00.5"},
		{Forever, TimeAuto, "forever"},
		{Beginning, TimeAuto | TimeLocal, "beginning"},
		{wall, TimeClock, "498611:06:40.123456789"},
	} {
		if got := FormatTime(c.t, c.f); got != c.want {
			t.Errorf("FormatTime(%d, %v) = %q, want %q", c.t, c.f, got, c.want)
		}
	}
	local := time.Unix(0, wall).Local().Format(time.RFC3339Nano)
	for _, c := range []struct {
		f, tz string
		want  string
	}{
		{"auto", "local", local},
		{"rfc3339", "local", local},
		{"auto", "utc", "2026-11-18T11:06:40.123456789Z"},
		{"ns", "local", "1795000000123456789"},
		{"clock", "local", "498611:06:40.123456789"},
	} {
		f, _ := ParseTimeFormat(c.f)
		g, err := WithTZ(f, c.tz)
		if got := FormatTime(wall, g); err != nil || got != c.want {
			t.Errorf("%s --tz %s: %q, %v; want %q", c.f, c.tz, got, err, c.want)
		}
	}
	if _, err := WithTZ(TimeAuto, "Mars"); err == nil || err.Error() != `unknown time zone "Mars" (want utc or local)` {
		t.Errorf("WithTZ(Mars): %v", err)
	}
}

func TestNextPrev(t *testing.T) {
	// The event at forever is a chronon like any other: [Forever, Next(Forever)).
	if Next(5) != 6 || Next(Forever) != math.MaxInt64 || Next(Forever) <= Forever || Next(Forever-1) != Forever {
		t.Error("Next")
	}
	if Clamp(Next(Forever)) != Forever || Clamp(7) != 7 {
		t.Error("Clamp")
	}
	for _, c := range [][2]Time{{Beginning, Forever}, {-20e9, Forever - 1}, {Beginning, Beginning + 1}, {-7, -3}, {3, 3}} {
		if m := Mid(c[0], c[1]); m < c[0] || m > c[1] || c[1]-c[0] > 1 && (m == c[0] && c[1]-c[0] > 2 || m == c[1]) {
			t.Errorf("Mid(%d, %d) = %d", c[0], c[1], m)
		}
	}
	if Prev(5) != 4 || Prev(Beginning) != Beginning || Prev(Beginning+1) != Beginning {
		t.Error("Prev")
	}
}

func TestValueFormat(t *testing.T) {
	tests := []struct {
		v           Value
		format, str string
	}{
		{Entity("P1"), "P1", `"P1"`},
		{Enum("Running", 1), "Running", `"Running"`},
		{Str("a \"b\""), `a "b"`, `"a \"b\""`},
		{Int(-3), "-3", "-3"},
		{Float(2.5), "2.5", "2.5"},
		{Float(1e21), "1e+21", "1e+21"},
		{Float(math.Inf(1)), "+Inf", "+Inf"},
		{Bool(true), "true", "true"},
		{TimeVal(1.5e9), "0:00:01.5", `"0:00:01.5"`},
		{TimeVal(Forever), "forever", `"forever"`},
		{DurationVal(90e9), "1m30s", "1m30s"},
		{DurationVal(0), "0s", "0s"},
	}
	for _, tt := range tests {
		if got := tt.v.Format(TimeClock); got != tt.format {
			t.Errorf("%#v.Format = %q, want %q", tt.v, got, tt.format)
		}
		if got := tt.v.String(); got != tt.str {
			t.Errorf("%#v.String = %q, want %q", tt.v, got, tt.str)
		}
	}
	if got := TimeVal(1.5e9).Format(TimeNS); got != "1500000000" {
		t.Errorf("ns format %q", got)
	}
}

func TestCompareValues(t *testing.T) {
	ordered := [][]Value{
		{Entity("P2"), Entity("P10"), Entity("P10a"), Entity("Q")},
		{Enum("Ready", 0), Enum("Running", 1), Enum("Done", 3)},
		{Int(-1), Float(0.5), Int(1), Float(math.Inf(1)), Float(math.NaN())},
		{Str("B"), Str("a"), Str("b")},
		{Bool(false), Bool(true)},
	}
	for _, list := range ordered {
		for i := range list {
			for j := range list {
				got := Compare(list[i], list[j])
				want := 0
				if i < j {
					want = -1
				} else if i > j {
					want = 1
				}
				if got != want {
					t.Errorf("Compare(%v, %v) = %d, want %d", list[i], list[j], got, want)
				}
			}
		}
	}
	if !Equal(Int(1), Float(1)) || Equal(Entity("P1"), Str("P1")) || !Equal(Float(0), Float(math.Copysign(0, -1))) {
		t.Error("Equal")
	}
}

// FuzzParseTime: whatever parses prints back (in every format) to a text
// that parses to the same time; nothing panics. Texts longer than 64 bytes
// are skipped: every time prints in at most 35, and Go's fuzzer minimizes
// each new input in time quadratic in its length, fuzzing nothing meanwhile.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{
		"0", "-7", "+7", "beginning", "forever", "2:54:20", "0:00:01.5", "-0:00:00.000000001",
		"2562047:47:16.854775806", "-2562047:47:16.854775807", "1970-01-01T00:00:00Z",
		"2026-11-21T11:00:00.123+01:00", "1:60:00", "9223372036854775807", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 64 {
			return
		}
		tm, err := ParseTime(s)
		if err != nil {
			if !errors.Is(err, ErrBadTime) || !strings.HasPrefix(err.Error(), "bad time: ") {
				t.Fatalf("ParseTime(%q): %v", s, err)
			}
			return
		}
		for _, f := range []TimeFormat{TimeNS, TimeClock, TimeRFC3339} {
			text := FormatTime(tm, f)
			back, err := ParseTime(text)
			if err != nil {
				t.Fatalf("ParseTime(%q) = %d; FormatTime(%s) = %q does not parse: %v", s, tm, f, text, err)
			}
			if back != tm {
				t.Fatalf("ParseTime(%q) = %d; FormatTime(%s) = %q parses to %d", s, tm, f, text, back)
			}
		}
	})
}
