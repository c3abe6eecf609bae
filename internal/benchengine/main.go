package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tqmon/tqmon/store/history"
)

// query is one benchmark query: its TQuel file and the SQL formulations
// DuckDB runs (paths relative to the repository's root).
type query struct {
	name string
	tq   string
	sql  []variant
}

// variant is one SQL formulation; above maxTuples (when set) it is not
// run, for the reason skip gives.
type variant struct {
	label, file string
	maxTuples   int
	skip        string
}

const here = "internal/benchengine"

func benchQueries() []query {
	q := func(f string) string { return filepath.Join(here, "queries", f) }
	return []query{
		{"P1's sends", q("p1_sends.tq"), []variant{{label: "", file: q("p1_sends.sql")}}},
		{"ResumedbyP1", "testdata/paper/resumed_by_p1.tq", []variant{
			{label: "join", file: q("resumed_by_p1.join.sql")},
			// DuckDB materialises the join under EXISTS: 10 GB at 1M
			// tuples; at 5M it would take the machine's memory.
			{"semi-join, EXISTS", q("resumed_by_p1.semi.sql"), 2_000_000, "DuckDB materialises the join: 10 GB at 1M tuples"},
			{label: "semi-join, first send", file: q("resumed_by_p1.first.sql")},
		}},
		{"overlap join", q("overlap.tq"), []variant{{label: "", file: q("overlap.sql")}}},
		{"queue length", "testdata/paper/queue_length.tq", []variant{{label: "", file: q("queue_length.sql")}}},
	}
}

type config struct {
	root, tqmon, node, dir string
	sizes                  []int
	rounds                 int
	timeout                time.Duration
	only                   *regexp.Regexp
	startup                measurement // DuckDB's fixed cost: node, loading DuckDB, SELECT 1 (medians)
}

func main() {
	var c config
	var sizes, only string
	flag.StringVar(&c.tqmon, "tqmon", "bin/tqmon", "the tqmon binary to measure")
	flag.StringVar(&c.node, "node", "node", "the Node.js binary that runs DuckDB")
	flag.StringVar(&sizes, "sizes", "100000,1000000,5000000", "history sizes in tuples, comma- or space-separated")
	flag.IntVar(&c.rounds, "rounds", 3, "interleaved rounds per query (medians)")
	flag.StringVar(&c.dir, "dir", filepath.Join(os.TempDir(), "tqmon-bench-engine"), "where generated histories are kept")
	flag.DurationVar(&c.timeout, "timeout", 15*time.Minute, "a command running longer is killed")
	flag.StringVar(&only, "run", "", "only the queries whose names match this regular expression")
	flag.Parse()
	if err := c.setup(sizes, only); err != nil {
		fmt.Fprintln(os.Stderr, "bench-engine:", err)
		os.Exit(2)
	}
	if err := c.bench(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-engine:", err)
		os.Exit(1)
	}
}

func (c *config) setup(sizes, only string) error {
	for _, f := range strings.FieldsFunc(sizes, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return fmt.Errorf("-sizes: %q is not a number of tuples", f)
		}
		c.sizes = append(c.sizes, n)
	}
	if c.rounds < 1 {
		return errors.New("-rounds must be at least 1")
	}
	var err error
	if c.only, err = regexp.Compile(only); err != nil {
		return fmt.Errorf("-run: %v", err)
	}
	if c.root, err = repoRoot(); err != nil {
		return err
	}
	if c.tqmon, err = filepath.Abs(c.tqmon); err != nil {
		return err
	}
	if _, err := os.Stat(c.tqmon); err != nil {
		return fmt.Errorf("no tqmon binary at %s (go build -o bin/tqmon ./cmd/tqmon)", c.tqmon)
	}
	if _, err := exec.LookPath(c.node); err != nil {
		return fmt.Errorf("DuckDB runs under Node.js, and %s is not on PATH: install nodejs and npm", c.node)
	}
	if _, err := os.Stat(filepath.Join(c.root, here, "node_modules/@duckdb/node-api")); err != nil {
		return fmt.Errorf("DuckDB's @duckdb/node-api is not installed: run npm ci in %s (make bench-engine does)", here)
	}
	return nil
}

// repoRoot is the directory above the working directory holding tqmon's
// go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/tqmon/tqmon\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run inside the tqmon repository")
		}
		dir = parent
	}
}

func (c *config) bench() error {
	work, err := os.MkdirTemp("", "bench-engine-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	specPath := filepath.Join(c.root, "testdata/paper/os.sdl")
	cat, err := history.LoadSpec(specPath)
	if err != nil {
		return err
	}

	if c.startup, err = c.duckStartup(work); err != nil {
		return err
	}
	fmt.Printf("tqmon against %s: whole commands, medians of %d interleaved rounds;\nDuckDB's start-up (node, DuckDB loaded, SELECT 1): %s s, %s s cpu\n\n",
		c.versions(), c.rounds, secs(c.startup.wall), secs(c.startup.cpu))
	fmt.Printf("%-9s %-36s %8s %8s %6s %9s %10s %7s %8s %9s %7s\n",
		"tuples", "query", "tqmon s", "DuckDB s", "ratio", "tqmon cpu", "DuckDB cpu", "cpu'", "tqmon MB", "DuckDB MB", "rows")

	var took []string
	for _, size := range c.sizes {
		start := time.Now()
		h, err := ensureHistory(c.dir, specPath, size)
		if err != nil {
			return fmt.Errorf("generating %d tuples: %w", size, err)
		}
		views := viewsSQL(h, cat)
		for _, q := range benchQueries() {
			if !c.only.MatchString(q.name) {
				continue
			}
			if err := c.benchQuery(work, h, views, q); err != nil {
				return fmt.Errorf("%s at %d tuples: %w", q.name, h.tuples, err)
			}
		}
		took = append(took, fmt.Sprintf("%d tuples %s", h.tuples, time.Since(start).Round(time.Second)))
	}
	fmt.Printf("\nratio: tqmon/DuckDB wall time (below 1: tqmon faster); cpu: user+system s; cpu': tqmon/DuckDB cpu\nwith DuckDB's start-up cpu taken from its own; MB: peak RSS. Took: %s.\n", strings.Join(took, ", "))
	return nil
}

// engineRuns collects one engine's rounds of one query.
type engineRuns struct {
	m      []measurement
	out    string // where its result goes
	failed bool   // timed out: not run again
}

func (e *engineRuns) wall() (time.Duration, bool) {
	var ds []time.Duration
	for _, m := range e.m {
		ds = append(ds, m.wall)
	}
	return median(ds), e.failed
}

func (e *engineRuns) cpu() time.Duration {
	var ds []time.Duration
	for _, m := range e.m {
		ds = append(ds, m.cpu)
	}
	return median(ds)
}

func (e *engineRuns) rssMB() float64 {
	var kb int64
	for _, m := range e.m {
		kb = max(kb, m.rssKB)
	}
	return float64(kb) / 1024
}

// benchQuery runs q's rounds — tqmon, then each SQL formulation, in turn —
// checks every result against the first, and prints a line per formulation.
func (c *config) benchQuery(work string, h generated, views string, q query) error {
	var active []variant
	for _, v := range q.sql {
		if v.maxTuples > 0 && h.tuples > v.maxTuples {
			fmt.Printf("%-9d %-36s not run above %d tuples: %s\n", h.tuples, q.name+" ("+v.label+")", v.maxTuples, v.skip)
			continue
		}
		active = append(active, v)
	}
	q.sql = active
	// tqmon runs just before each SQL formulation, and each is compared
	// with the tqmon run next to it: a long formulation (DuckDB's naive
	// join, minutes at 5M tuples) between would put minutes of a shared
	// machine's changing load between the two compared.
	tqs := make([]*engineRuns, len(q.sql))
	for i := range tqs {
		tqs[i] = &engineRuns{out: filepath.Join(work, "tqmon.csv")}
	}
	tqArgs := []string{c.tqmon, "query", "--history", h.dir, "-f", filepath.Join(c.root, q.tq), "--format", "csv", "--time-format", "ns"}
	ducks := make([]*engineRuns, len(q.sql))
	scripts := make([]string, len(q.sql))
	for i, v := range q.sql {
		sql, err := os.ReadFile(filepath.Join(c.root, v.file))
		if err != nil {
			return err
		}
		ducks[i] = &engineRuns{out: filepath.Join(work, fmt.Sprintf("duckdb%d.csv", i))}
		scripts[i] = filepath.Join(work, fmt.Sprintf("duckdb%d.sql", i))
		setup, body := splitLast(string(sql))
		text := fmt.Sprintf("%s%sCOPY (\n%s\n) TO %s (FORMAT csv, HEADER);\n", views, setup, body, sqlString(ducks[i].out))
		if err := os.WriteFile(scripts[i], []byte(text), 0o644); err != nil {
			return err
		}
	}

	var want string
	var nrows int
	check := func(e *engineRuns, who string) error {
		got, n, err := rows(e.out)
		if err != nil {
			return err
		}
		if want == "" {
			want, nrows = got, n
			return nil
		}
		if got != want {
			return fmt.Errorf("%w: %s against the first result: %s", errDiffer, who, firstDifference(got, want))
		}
		return nil
	}
	step := func(e *engineRuns, argv []string, stdout, who string) error {
		if e.failed {
			return nil
		}
		m, err := run(argv, stdout, c.timeout)
		if err != nil {
			return err
		}
		e.m = append(e.m, m)
		if m.timedOut {
			e.failed = true
			return nil
		}
		return check(e, who)
	}
	for r := 0; r < c.rounds; r++ {
		for i, d := range ducks {
			if err := step(tqs[i], tqArgs, tqs[i].out, "tqmon"); err != nil {
				return err
			}
			label := "DuckDB"
			if q.sql[i].label != "" {
				label += " (" + q.sql[i].label + ")"
			}
			if err := step(d, []string{c.node, filepath.Join(c.root, here, "duck.mjs"), scripts[i]}, "", label); err != nil {
				return err
			}
		}
	}

	for i, d := range ducks {
		name := q.name
		if q.sql[i].label != "" {
			name += " (" + q.sql[i].label + ")"
		}
		tq := tqs[i]
		tw, tf := tq.wall()
		dw, df := d.wall()
		fmt.Printf("%-9d %-36s %8s %8s %6s %9s %10s %7s %8.0f %9.0f %7d\n",
			h.tuples, name, c.wallText(tw, tf), c.wallText(dw, df), c.ratio(tw, tf, dw, df, 0),
			secs(tq.cpu()), secs(d.cpu()), c.ratio(tq.cpu(), tf, d.cpu(), df, c.startup.cpu),
			tq.rssMB(), d.rssMB(), nrows)
	}
	return nil
}

// splitLast parts a SQL file into the statements before its last (settings;
// each ends a line with ";") and the last, the query, without its ";".
func splitLast(sql string) (setup, query string) {
	sql = strings.TrimRight(strings.TrimSpace(sql), ";")
	if i := strings.LastIndex(sql, ";\n"); i >= 0 {
		return sql[:i+2], sql[i+2:]
	}
	return "", sql
}

// ratio is tqmon's time over DuckDB's less fixed (its start-up, or 0): "-"
// when either timed out or DuckDB's time less fixed is too small to tell
// from the start-up's variation, except that a tqmon that timed out against a wall
// time is at least ">n" times slower.
const tooSmall = 50 * time.Millisecond

func (c *config) ratio(tq time.Duration, tqTimedOut bool, duck time.Duration, duckTimedOut bool, fixed time.Duration) string {
	d := max(duck-fixed, time.Millisecond)
	switch {
	case duckTimedOut, tqTimedOut && fixed != 0, fixed != 0 && d < tooSmall:
		return "-"
	case tqTimedOut:
		return fmt.Sprintf(">%.0f", c.timeout.Seconds()/d.Seconds())
	}
	return fmt.Sprintf("%.2f", tq.Seconds()/d.Seconds())
}

func (c *config) wallText(d time.Duration, timedOut bool) string {
	if timedOut {
		return "> " + strconv.FormatFloat(c.timeout.Seconds(), 'f', 0, 64)
	}
	return secs(d)
}

func secs(d time.Duration) string {
	s := d.Seconds()
	if s < 10 {
		return strconv.FormatFloat(s, 'f', 3, 64)
	}
	return strconv.FormatFloat(s, 'f', 1, 64)
}

// duckStartup is what DuckDB costs doing nothing (medians): node
// starting, loading DuckDB, SELECT 1.
func (c *config) duckStartup(work string) (measurement, error) {
	script := filepath.Join(work, "startup.sql")
	if err := os.WriteFile(script, []byte("SELECT 1;\n"), 0o644); err != nil {
		return measurement{}, err
	}
	e := &engineRuns{}
	for r := 0; r < c.rounds; r++ {
		m, err := run([]string{c.node, filepath.Join(c.root, here, "duck.mjs"), script}, "", c.timeout)
		if err != nil {
			return measurement{}, err
		}
		e.m = append(e.m, m)
	}
	wall, _ := e.wall()
	return measurement{wall: wall, cpu: e.cpu()}, nil
}

// versions names the node and DuckDB that run.
func (c *config) versions() string {
	node, err := exec.Command(c.node, "--version").Output()
	if err != nil {
		return "?"
	}
	duck, err := exec.Command(c.node, filepath.Join(c.root, here, "duck.mjs"), "--version").Output()
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("DuckDB %s on node %s", strings.TrimSpace(string(duck)), strings.TrimSpace(string(node)))
}
