package history

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/internal/testkit"
)

const typesSpec = `entity type Task
entity relation Task(Task: Task, Prio: int, Load: float, Name: string, Urgent: bool, Slice: duration, Started: time, Phase: enum(Init, Run, Stop))
event relation Ping(Task: Task, N: int)
`

func typesCatalog(t testing.TB) *algebra.Catalog {
	t.Helper()
	return testkit.CompileSpec(t, "types.sdl", typesSpec)
}

func row(t *algebra.Table, i int) string {
	return strings.Join(rowFields(t, i), ",")
}

func rowFields(t *algebra.Table, i int) []string {
	r := &t.Rows[i]
	var f []string
	for _, v := range r.Vals {
		f = append(f, v.Format(algebra.TimeClock))
	}
	f = append(f, algebra.FormatTime(r.From, algebra.TimeClock))
	if !t.Rel.IsEvent() {
		f = append(f, algebra.FormatTime(r.To, algebra.TimeClock))
	}
	return f
}

func TestLoadPaper(t *testing.T) {
	h, err := Load("../../testdata/paper")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{"Processor": 2, "Process": 10, "Mailbox": 7, "SendMessage": 6, "RunningOn": 4, "Waiting": 1}
	for name, n := range counts {
		tab := h.Table(name)
		if tab == nil || len(tab.Rows) != n {
			t.Errorf("%s: %v rows, want %d", name, tab, n)
			continue
		}
		if err := tab.Validate(); err != nil {
			t.Error(err)
		}
	}
	if got := row(h.Table("Waiting"), 0); got != "P2,M7,2:45:29,2:54:20" {
		t.Errorf("Waiting row %s", got)
	}
	if got := row(h.Table("SendMessage"), 2); got != "P2,M1,2:10:40" {
		t.Errorf("SendMessage row %s", got)
	}
	st := h.Table("Process").Rows[0].Vals[1]
	if st.K != algebra.KindEnum || st.S != "Running" || st.N != 1 {
		t.Errorf("State value %#v", st)
	}
	start, end, ok := h.Extent()
	if !ok || start != 3600e9 || end != 4*3600e9 {
		t.Errorf("extent %d..%d %v", start, end, ok)
	}
}

func TestLoadTQuelExamples(t *testing.T) {
	h, err := Load("../../testdata/tquel")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{"Processor": 0, "Process": 6, "Mailbox": 0, "SendMessage": 3, "RunningOn": 3, "Waiting": 2}
	for name, n := range counts {
		if got := len(h.Table(name).Rows); got != n {
			t.Errorf("%s: %d rows, want %d", name, got, n)
		}
	}
	if got := row(h.Table("Process"), 0); got != "P1,Running,0:00:00.000000001,0:00:00.000000005" {
		t.Errorf("Process row %s", got)
	}
	if r := h.Table("SendMessage").Rows[2]; r.From != 12 || r.To != 13 {
		t.Errorf("event at 12 is [%d, %d)", r.From, r.To)
	}
}

// TestReadCSVValues reads every attribute type, every time notation, an
// open interval, a BOM, CRLF line ends and quoted fields.
func TestReadCSVValues(t *testing.T) {
	cat := typesCatalog(t)
	data := "\ufeffTask,Prio,Load,Name,Urgent,Slice,Started,Phase,from,to\r\n" +
		"T1,3,1.5,\"a, b\",true,1m30s,1:00:00.25,Run,1,2026-11-21T10:00:00Z\r\n" +
		"T2, -4 ,2e3,,false,10ms,beginning,Stop,beginning,\r\n" +
		"\r\n" +
		"T3,0,0,\"say \"\"hi\"\"\",1,0s,7,Init,0:00:01,forever\r\n"
	tab := &algebra.Table{Rel: cat.Lookup("Task")}
	if err := ReadCSV("Task.csv", []byte(data), tab); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"T1|3|1.5|a, b|true|1m30s|1:00:00.25|Run|0:00:00.000000001|498682:00:00",
		"T2|-4|2000||false|10ms|beginning|Stop|beginning|forever",
		"T3|0|0|say \"hi\"|true|0s|0:00:00.000000007|Init|0:00:01|forever",
	}
	if len(tab.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(tab.Rows), len(want))
	}
	for i, w := range want {
		if got := strings.Join(rowFields(tab, i), "|"); got != w {
			t.Errorf("row %d:\n got  %s\n want %s", i, got, w)
		}
	}
	if err := tab.Validate(); err != nil {
		t.Error(err)
	}

	// Columns in any order; an event's at.
	ping := &algebra.Table{Rel: cat.Lookup("Ping")}
	if err := ReadCSV("Ping.csv", []byte("at,N,Task\n5,1,T1\n0:00:02,2,T2\n"), ping); err != nil {
		t.Fatal(err)
	}
	if got := row(ping, 0) + " " + row(ping, 1); got != "T1,1,0:00:00.000000005 T2,2,0:00:02" {
		t.Errorf("Ping rows %s", got)
	}
	if ping.Rows[0].To != 6 {
		t.Errorf("event at 5 ends at %d", ping.Rows[0].To)
	}
}

func TestReadCSVErrors(t *testing.T) {
	cat := typesCatalog(t)
	const taskHeader = "Task,Prio,Load,Name,Urgent,Slice,Started,Phase,from,to\n"
	const good = "T1,1,1,n,true,1s,0:00:01,Run"
	tests := []struct {
		name, rel, data string
		want            string // diagnostics without the "X.csv:" prefix
	}{
		{"empty file", "Task", "", "1:1: empty file: expected a header row"},
		{"header only is fine", "Task", taskHeader, ""},
		{"bad from time", "Task", taskHeader + good + ",1:0:00,2:00:00\n",
			`2:30: from: bad time: "1:0:00": minutes must be two digits (clock notation is H:MM:SS[.fraction])`},
		{"bad to time", "Task", taskHeader + good + ",1:00:00,noon\n",
			`2:38: to: bad time: "noon" is not beginning, forever, integer nanoseconds, H:MM:SS[.fraction] or RFC 3339`},
		{"to before from", "Task", taskHeader + good + ",2:00:00,1:00:00\n",
			"2:38: to (1:00:00) is before from (2:00:00)"},
		{"to equals from", "Task", taskHeader + good + ",7,7\n",
			"2:32: to equals from (7): an interval must not be empty"},
		{"empty from", "Task", taskHeader + good + ",,7\n",
			"2:30: from: an interval needs a start time"},
		{"unknown column", "Task", "Task,Prio,Load,Name,Urgent,Slice,Started,Phase,Colour,from,to\n",
			"1:48: unknown column Colour: Task has Task,Prio,Load,Name,Urgent,Slice,Started,Phase,from,to"},
		{"at in an interval relation", "Task", "Task,Prio,Load,Name,Urgent,Slice,Started,Phase,at\n",
			"1:48: unknown column at: Task has Task,Prio,Load,Name,Urgent,Slice,Started,Phase,from,to\n" +
				"1:1: missing column from (Task is an interval relation: from,to)\n" +
				"1:1: missing column to (Task is an interval relation: from,to)"},
		{"missing attribute column", "Task", "Task,Prio,Load,Name,Urgent,Slice,Started,from,to\n",
			"1:1: missing column Phase (Task has Task,Prio,Load,Name,Urgent,Slice,Started,Phase,from,to)"},
		{"missing at", "Ping", "Task,N\nT1,1\n",
			"1:1: missing column at (Ping is an event relation: at)"},
		{"from,to in an event relation", "Ping", "Task,N,from,to\n",
			"1:8: unknown column from: Ping has Task,N,at\n" +
				"1:13: unknown column to: Ping has Task,N,at\n" +
				"1:1: missing column at (Ping is an event relation: at)"},
		{"duplicate column", "Ping", "Task,N,Task,at\n",
			"1:8: column Task appears twice (also column 1)"},
		{"empty column name", "Ping", "Task,N,,at\n",
			"1:8: empty column name: Ping has Task,N,at"},
		{"too few fields", "Ping", "Task,N,at\nT1,1\n",
			"2:1: row has 2 fields, the header has 3"},
		{"too many fields", "Ping", "Task,N,at\nT1,1,5,6,7\n",
			"2:8: row has 5 fields, the header has 3"},
		{"event at forever", "Ping", "Task,N,at\nT1,1,forever\n",
			"2:6: at: an event cannot happen at forever"},
		{"event without a time", "Ping", "Task,N,at\nT1,1, \n",
			"2:6: at: an event needs a time"},
		{"bad event time", "Ping", "Task,N,at\nT1,1,2026-13-01T00:00:00Z\n",
			`2:6: at: bad time: "2026-13-01T00:00:00Z" is not beginning, forever, integer nanoseconds, H:MM:SS[.fraction] or RFC 3339`},
		{"time out of range", "Ping", "Task,N,at\nT1,1,9223372036854775807\n",
			`2:6: at: bad time: "9223372036854775807" is reserved for beginning/forever`},
		{"enum value not a member", "Task", taskHeader + "T1,1,1,n,true,1s,0:00:01,Running,1,2\n",
			`2:26: Phase: "Running" is not a member of enum(Init, Run, Stop)`},
		{"bad int", "Ping", "Task,N,at\nT1,1.5,3\n",
			`2:4: N: "1.5" is not an int`},
		{"bad float", "Task", taskHeader + "T1,1,x,n,true,1s,0:00:01,Run,1,2\n",
			`2:6: Load: "x" is not a float`},
		{"bad bool", "Task", taskHeader + "T1,1,1,n,yes,1s,0:00:01,Run,1,2\n",
			`2:10: Urgent: "yes" is not a bool (true or false)`},
		{"bad duration", "Task", taskHeader + "T1,1,1,n,true,5 minutes,0:00:01,Run,1,2\n",
			`2:15: Slice: "5 minutes" is not a duration (e.g. 1.5s, 10ms, 1h2m)`},
		{"bad time attribute", "Task", taskHeader + "T1,1,1,n,true,1s,0:00:60,Run,1,2\n",
			`2:18: Started: bad time: "0:00:60": seconds must be below 60 (clock notation is H:MM:SS[.fraction])`},
		{"empty entity", "Ping", "Task,N,at\n,1,3\n",
			"2:1: Task: empty Task identifier"},
		{"bare quote", "Ping", "Task,N,at\nT\"1,1,3\n",
			`2:2: bare " in non-quoted-field`},
		{"quote after a quoted field", "Ping", "Task,N,at\n\"T1\"x,1,3\n",
			`2:4: extraneous or missing " in quoted-field`},
		{"unterminated quote", "Ping", "Task,N,at\nT1,1,\"3\n",
			`2:8: extraneous or missing " in quoted-field`},
		{"bad quote in the header", "Ping", "Task,\"N,at\n",
			`1:11: extraneous or missing " in quoted-field`},
		{"positions count characters", "Ping", "Task,N,at\nTäsk→,x,3\n",
			`2:7: N: "x" is not an int`},
		{"several errors in one file", "Task", taskHeader +
			good + ",1,2\n" +
			"T2,x,1,n,true,1s,0:00:01,Run,1,2\n" +
			good + ",5,4\n" +
			"T4,1\n" +
			"T5,1,1,n,maybe,1s,0:00:01,Walk,1,2\n",
			"3:4: Prio: \"x\" is not an int\n" +
				"4:32: to (4) is before from (5)\n" +
				"5:1: row has 2 fields, the header has 10\n" +
				"6:10: Urgent: \"maybe\" is not a bool (true or false)\n" +
				"6:27: Phase: \"Walk\" is not a member of enum(Init, Run, Stop)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.rel + ".csv"
			tab := &algebra.Table{Rel: cat.Lookup(tt.rel)}
			err := ReadCSV(file, []byte(tt.data), tab)
			var want []string
			if tt.want != "" {
				for _, l := range strings.Split(tt.want, "\n") {
					want = append(want, file+":"+l)
				}
			}
			if got := testkit.DiagLines(err); got != strings.Join(want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
			checkPositions(t, file, tt.data, err)
		})
	}
}

// checkPositions: every diagnostic names the file and points into the text
// or just past the end of a line.
func checkPositions(t *testing.T, file, data string, err error) {
	t.Helper()
	lines := strings.Split(data, "\n")
	for _, d := range source.Diagnostics(err) {
		if d.File != file || d.Msg == "" {
			t.Errorf("bad diagnostic %#v", d)
			continue
		}
		if !d.Pos.IsValid() {
			if d.Msg != "too many errors; stopped" {
				t.Errorf("unpositioned diagnostic %v", d)
			}
			continue
		}
		if d.Pos.Line > len(lines) || d.Pos.Col < 1 || d.Pos.Col > len([]rune(lines[d.Pos.Line-1]))+1 {
			t.Errorf("diagnostic outside the text: %v", d)
		}
	}
}

func TestReadCSVTooManyErrors(t *testing.T) {
	cat := typesCatalog(t)
	data := "Task,N,at\n" + strings.Repeat("T,x,1\n", 50)
	err := ReadCSV("Ping.csv", []byte(data), &algebra.Table{Rel: cat.Lookup("Ping")})
	list := source.Diagnostics(err)
	if len(list) != maxErrors+1 {
		t.Fatalf("%d diagnostics, want %d", len(list), maxErrors+1)
	}
	if last := list[len(list)-1].Error(); last != "Ping.csv: too many errors; stopped" {
		t.Errorf("last diagnostic %q", last)
	}
	if first := list[0].Error(); first != `Ping.csv:2:3: N: "x" is not an int` {
		t.Errorf("first diagnostic %q", first)
	}
}

func TestLoadErrors(t *testing.T) {
	spec := "entity type P\nentity relation P(P: P)\nevent relation E(p: P, n: int)\n"
	t.Run("extra files ignored", func(t *testing.T) {
		dir := testkit.WriteFiles(t, map[string]string{
			"s.sdl":            spec,
			"E.csv":            "p,n,at\nP1,1,5\n",
			"x.expected.csv":   "garbage,\"\n",
			"notes.txt":        "hello",
			"E-backup.csv":     "junk",
			"README.md":        "# history",
			"resumed.tq":       "retrieve (x = 1)",
			"query.result.csv": "a,b",
		})
		if err := os.Mkdir(filepath.Join(dir, "sub.csv"), 0o755); err != nil {
			t.Fatal(err)
		}
		h, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Table("E").Rows) != 1 || len(h.Table("P").Rows) != 0 {
			t.Errorf("rows: E %d, P %d", len(h.Table("E").Rows), len(h.Table("P").Rows))
		}
	})
	t.Run("unknown relation file", func(t *testing.T) {
		dir := testkit.WriteFiles(t, map[string]string{"s.sdl": spec, "Foo.csv": "a\n"})
		_, err := Load(dir)
		want := filepath.Join(dir, "Foo.csv") + ":1:1: no relation Foo in " + filepath.Join(dir, "s.sdl")
		if got := testkit.DiagLines(err); got != want {
			t.Errorf("got %q\nwant %q", got, want)
		}
	})
	t.Run("no spec", func(t *testing.T) {
		dir := testkit.WriteFiles(t, map[string]string{"E.csv": "p,n,at\n"})
		_, err := Load(dir)
		if got, want := testkit.DiagLines(err), "history "+dir+": no sensor-description (.sdl) file"; got != want {
			t.Errorf("got %q\nwant %q", got, want)
		}
	})
	t.Run("several specs", func(t *testing.T) {
		dir := testkit.WriteFiles(t, map[string]string{"a.sdl": spec, "b.sdl": spec})
		_, err := Load(dir)
		if got, want := testkit.DiagLines(err), "history "+dir+": several .sdl files (a.sdl, b.sdl); a history has exactly one"; got != want {
			t.Errorf("got %q\nwant %q", got, want)
		}
	})
	t.Run("no directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "nope")
		if _, err := Load(dir); err == nil || !strings.HasPrefix(err.Error(), "history "+dir+": ") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("spec syntax error", func(t *testing.T) {
		dir := testkit.WriteFiles(t, map[string]string{"s.sdl": "entity type P\nevent relation E(p P)\n"})
		_, err := Load(dir)
		list := source.Diagnostics(err)
		if len(list) == 0 || list[0].File != filepath.Join(dir, "s.sdl") || list[0].Pos != (source.Pos{Line: 2, Col: 20}) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("spec semantic error", func(t *testing.T) {
		dir := testkit.WriteFiles(t, map[string]string{"s.sdl": "event relation E(p: P)\n", "E.csv": "p,at\n"})
		_, err := Load(dir)
		want := filepath.Join(dir, "s.sdl") + ":1:21: unknown type P (want an entity type, int, float, string, bool, time, duration or enum(...))"
		if got := testkit.DiagLines(err); got != want {
			t.Errorf("got %q\nwant %q", got, want)
		}
	})
	t.Run("errors of several files", func(t *testing.T) {
		dir := testkit.WriteFiles(t, map[string]string{
			"s.sdl": spec,
			"E.csv": "p,n,at\nP1,one,5\nP2,2,5,6\n",
			"P.csv": "P,from,to\nP1,3,1\n",
		})
		_, err := Load(dir)
		e, p := filepath.Join(dir, "E.csv"), filepath.Join(dir, "P.csv")
		want := e + `:2:4: n: "one" is not an int` + "\n" +
			e + ":3:8: row has 4 fields, the header has 3\n" +
			p + ":2:6: to (1) is before from (3)"
		if got := testkit.DiagLines(err); got != want {
			t.Errorf("got:\n%s\nwant:\n%s", got, want)
		}
	})
}

// FuzzReadCSV: ReadCSV never panics; its diagnostics are positioned inside
// the text; on success every tuple is valid. Each input is read as the CSV
// of an event relation (Ping) and of an interval relation (Task). Inputs
// longer than 256 bytes are skipped: Go's fuzzer minimizes every input that
// finds new coverage, in time quadratic in its length, and fuzzes nothing
// meanwhile; a header and a few rows (or the 21 bad rows that reach
// maxErrors) fit.
func FuzzReadCSV(f *testing.F) {
	cat := typesCatalog(f)
	f.Add([]byte("Task,N,at\nT1,1,5\n"))
	f.Add([]byte("Task,Prio,Load,Name,Urgent,Slice,Started,Phase,from,to\nT1,3,1.5,x,true,1s,1:00:00,Run,1,\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 256 {
			return
		}
		for _, name := range []string{"Ping", "Task"} {
			tab := &algebra.Table{Rel: cat.Lookup(name)}
			err := ReadCSV(name+".csv", data, tab)
			if err != nil {
				list := source.Diagnostics(err)
				if len(list) == 0 || len(list) > maxErrors+1 {
					t.Fatalf("%s: %d diagnostics: %v", name, len(list), err)
				}
				checkPositions(t, name+".csv", string(data), err)
				continue
			}
			if err := tab.Validate(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	})
}

// TestLoadHostileFiles: a relation's file that is not a regular file is an
// error naming what it is (never read: a pipe would block), and a file
// that is not a history of its relation is refused without echoing what
// it holds.
func TestLoadHostileFiles(t *testing.T) {
	spec := "entity type P\nentity relation P(P: P)\nevent relation E(p: P, n: int)\n"
	t.Run("directory", func(t *testing.T) {
		dir := testkit.WriteFiles(t, map[string]string{"s.sdl": spec})
		if err := os.Mkdir(filepath.Join(dir, "E.csv"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), "E.csv is a directory, not a regular file") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("named pipe", func(t *testing.T) {
		dir := testkit.WriteFiles(t, map[string]string{"s.sdl": spec})
		if err := syscall.Mkfifo(filepath.Join(dir, "E.csv"), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		done := make(chan error, 1)
		go func() { _, err := Load(dir); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "E.csv is a named pipe, not a regular file") {
				t.Errorf("got %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Load blocked on a named pipe")
		}
	})
	t.Run("symlink to a secret", func(t *testing.T) {
		secret := filepath.Join(t.TempDir(), "shadow")
		const line = "root:$6$s3cr3tHash$abcdef:19000:0:99999:7:::"
		if err := os.WriteFile(secret, []byte(line+"\ndaemon:*:19000:0:99999:7:::\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		dir := testkit.WriteFiles(t, map[string]string{"s.sdl": spec})
		if err := os.Symlink(secret, filepath.Join(dir, "E.csv")); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir)
		if err == nil {
			t.Fatal("a file that is not a history loaded")
		}
		if msg := testkit.DiagLines(err); strings.Contains(msg, "s3cr3t") || strings.Contains(msg, "root") || strings.Contains(msg, "daemon") {
			t.Errorf("the error echoes the file's contents: %s", msg)
		} else if !strings.Contains(msg, "E.csv:1:1: not a history of E: the first line names none of its columns (p,n,at)") {
			t.Errorf("got %s", msg)
		}
	})
	t.Run("spec that is a directory", func(t *testing.T) {
		dir := testkit.WriteFiles(t, map[string]string{"E.csv": "p,n,at\n"})
		if err := os.Mkdir(filepath.Join(dir, "s.sdl"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "s.sdl is a directory, not a regular file") {
			t.Errorf("got %v", err)
		}
	})
}

// TestReadCSVText: values and column names must be valid UTF-8 without NUL
// bytes, and a line longer than MaxLine is refused before it is parsed;
// each error has its place.
func TestReadCSVText(t *testing.T) {
	cat := typesCatalog(t)
	for _, c := range []struct{ name, data, want string }{
		{"NUL in a value", "Task,N,at\nT1,1,5\nT\x002,2,6\n", "f.csv:3:1: value holds a NUL byte"},
		{"invalid UTF-8 in a value", "Task,N,at\nT\xff1,1,5\n", "f.csv:2:1: value is not valid UTF-8"},
		{"invalid UTF-8 in a column name", "Task,N,at,\xfe\n", "f.csv:1:11: column name is not valid UTF-8"},
		{"line too long", "Task,N,at\nT1,1,5\nT1," + strings.Repeat("9", MaxLine) + ",6\n", "f.csv:3:1: line 3 is longer than 1048576 bytes, the most a history line may be"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tab := algebra.NewHistory(cat).Table("Ping")
			err := ReadCSV("f.csv", []byte(c.data), tab)
			if got := testkit.DiagLines(err); !strings.HasPrefix(got, c.want) {
				t.Errorf("got %q\nwant %q", got, c.want)
			}
			if len(tab.Rows) != 0 && c.name != "NUL in a value" {
				t.Errorf("%d rows read from a refused file", len(tab.Rows))
			}
		})
	}
}
