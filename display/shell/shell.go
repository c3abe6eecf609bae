package shell

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/ergochat/readline"
	"golang.org/x/term"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/grammar/tquel"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/subject"
)

// shell is one interactive session.
type shell struct {
	export  func(ctx context.Context, rels []*algebra.Relation) (Exporter, error)
	src     subject.Subject
	sess    *check.Session
	out     *bufio.Writer
	errw    io.Writer
	opts    format.Options
	timing  bool
	params  map[string]string
	buf     strings.Builder // the statement being typed
	n       int             // statements run, for naming them in diagnostics
	derived []*check.Retrieve
	log     []query.Source // the statements that checked, for \view
	record  string         // \record's database
	display string         // \display's spec file
	quit    bool
	rl      *readline.Instance
	render  func(error) string

	stdout      io.Writer // where output goes without \o
	outFile     *os.File  // \o FILE's file, nil for stdout
	interactive bool      // stdin is a terminal: prompts, history, pager, colour
	color       bool      // errors in red (interactive, unless NO_COLOR or TERM=dumb)
	pager       bool      // \pset pager: long results go through $PAGER
	pagerCmd    string    // $PAGER ("": less)
	lines       []string  // the physical lines of the statement being typed, for history
	failures    int       // statements and commands that failed
}

// ErrFailed is what Run returns (wrapped, with a count) when its input was
// not a terminal — a script — and a statement or command in it failed:
// the errors themselves were printed as they happened; the script runs to
// its end, and the caller exits non-zero.
var ErrFailed = errors.New("errors in the input")

// Config shape a shell session.
type Config struct {
	// Subject is what the session queries; the caller closes it.
	Subject subject.Subject
	// Output is how results print (\format and \time change it).
	Output format.Options
	// Params are the values of $NAME (\param sets one).
	Params map[string]string
	// HistoryFile is where the lines typed are kept ("": nowhere).
	HistoryFile string
	// Render renders an error for the user (positioned ones with the
	// source line and a caret, which they carry).
	Render func(error) string
	// Getenv reads the environment (NO_COLOR, TERM, PAGER); nil: os.Getenv.
	Getenv func(string) string
	// Export, when set, starts exporters for each statement's results
	// (rels, in order): the command's --prometheus, --otlp and --exec,
	// serving while the statement runs (export.go).
	Export func(ctx context.Context, rels []*algebra.Relation) (Exporter, error)
}

// Run runs a session over stdin: interactively, with prompts, line
// editing and completion, when stdin is a terminal; else statement by
// statement, without prompts, like a file. It returns when the input ends
// or the user quits (\q, exit, quit); the error is a failure of the
// terminal, or, for input that is not a terminal, ErrFailed when a
// statement or command failed.
func Run(cfg Config, stdin io.Reader, stdout, stderr io.Writer) error {
	src := cfg.Subject
	opts, params := cfg.Output, cfg.Params
	if params == nil {
		params = map[string]string{}
	}
	if cfg.Render == nil {
		cfg.Render = func(err error) string {
			var b strings.Builder
			for _, d := range source.Diagnostics(err) {
				b.WriteString(d.Error() + "\n")
			}
			return b.String()
		}
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	sh := &shell{src: src, out: bufio.NewWriter(stdout), stdout: stdout, errw: stderr, opts: opts, params: params,
		render: cfg.Render, pager: true, export: cfg.Export}
	sh.sess = check.NewSession(src.Catalog(), check.Options{Params: params, Now: src.Now()})
	defer sh.closeOutput()

	if fd, ok := stdin.(*os.File); ok && term.IsTerminal(int(fd.Fd())) {
		sh.interactive = true
	}
	if !sh.interactive {
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for !sh.quit && sc.Scan() {
			sh.line(sc.Text())
		}
		if p := sh.pending(); p != "" && !sh.quit {
			sh.run(p)
		}
		if err := sh.out.Flush(); err != nil {
			return err
		}
		if sh.failures > 0 {
			return fmt.Errorf("%w: %d statement(s) or command(s) failed", ErrFailed, sh.failures)
		}
		return nil
	}
	sh.color = cfg.Getenv("NO_COLOR") == "" && cfg.Getenv("TERM") != "dumb"
	sh.pagerCmd = cfg.Getenv("PAGER")

	if cfg.HistoryFile != "" {
		os.MkdirAll(filepath.Dir(cfg.HistoryFile), 0o755)
	}
	rl, err := readline.NewFromConfig(&readline.Config{
		Prompt:            "tqmon=> ",
		HistoryFile:       cfg.HistoryFile,
		HistorySearchFold: true,
		// History keeps statements, not physical lines: a statement typed
		// over three lines comes back as one (sh.remember).
		DisableAutoSaveHistory: true,
		AutoComplete:           completer{sh},
		InterruptPrompt:        "^C",
		EOFPrompt:              `\q`,
		Stdin:                  stdin,
		Stdout:                 stdout,
		Stderr:                 stderr,
	})
	if err != nil {
		return err
	}
	defer rl.Close()
	sh.rl = rl
	fmt.Fprintf(sh.out, "tqmon shell — %s\nType TQuel statements (end with ; or a blank line), \\? for help, \\q or exit to quit.\n", src.Describe())
	sh.out.Flush()
	for !sh.quit {
		if sh.pending() == "" {
			rl.SetPrompt("tqmon=> ")
		} else {
			rl.SetPrompt("tqmon-> ")
		}
		line, err := rl.ReadLine()
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			sh.buf.Reset() // Ctrl-C at the prompt drops the statement being typed
			sh.lines = nil
			continue
		case errors.Is(err, io.EOF):
			if p := sh.pending(); p != "" {
				sh.run(p)
			}
			sh.quit = true
			continue
		case err != nil:
			return err
		}
		sh.line(line)
	}
	return sh.out.Flush()
}

// pending is the statement text typed so far.
func (sh *shell) pending() string { return sh.buf.String() }

// line takes one input line: a meta command (at the start of a
// statement), part of a statement, or the end of one (";" or a blank line).
func (sh *shell) line(line string) {
	defer sh.out.Flush()
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, `\`) {
		sh.saveHistory(t) // a statement being typed stays pending, its lines too
		sh.meta(t)
		return
	}
	if sh.pending() == "" && isQuit(t) {
		sh.saveHistory(t)
		sh.quit = true
		return
	}
	if t == "" {
		if p := sh.pending(); strings.TrimSpace(p) != "" {
			sh.buf.Reset()
			sh.remember()
			sh.run(p)
		}
		return
	}
	sh.buf.WriteString(line + "\n")
	sh.lines = append(sh.lines, t)
	if strings.HasSuffix(strings.TrimSpace(stripComment(t)), ";") {
		p := sh.pending()
		sh.buf.Reset()
		sh.remember()
		sh.run(p)
	}
}

// isQuit says whether a line alone is exit or quit (psql's words; a
// statement cannot begin with either).
func isQuit(t string) bool {
	t = strings.TrimSpace(strings.TrimSuffix(t, ";"))
	return t == "exit" || t == "quit"
}

// remember adds the statement just ended to the history as one entry
// (its physical lines joined by spaces), and forgets its lines.
func (sh *shell) remember() {
	sh.saveHistory(strings.Join(sh.lines, " "))
	sh.lines = nil
}

// saveHistory adds an entry to the history (interactive sessions only).
func (sh *shell) saveHistory(entry string) {
	if sh.rl != nil && entry != "" {
		sh.rl.SaveToHistory(entry)
	}
}

// stripComment drops a "--" comment that is not inside a string.
func stripComment(s string) string {
	in := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"':
			in = !in
		case !in && s[i] == '-' && i+1 < len(s) && s[i+1] == '-':
			return s[:i]
		}
	}
	return s
}

// errorf reports a failure on stderr, keeping output ordered: in red on
// a terminal that takes colour, and counted (a script with failures ends
// in ErrFailed).
func (sh *shell) errorf(format string, args ...any) {
	sh.failures++
	sh.out.Flush()
	msg := fmt.Sprintf(format, args...)
	if sh.color {
		msg = "\x1b[31m" + strings.TrimSuffix(msg, "\n") + "\x1b[0m\n"
	}
	io.WriteString(sh.errw, msg)
}

// notef prints a note on stderr (not a failure), keeping output ordered.
func (sh *shell) notef(format string, args ...any) {
	sh.out.Flush()
	fmt.Fprintf(sh.errw, format, args...)
}

// compile parses and checks text in the session (committing its range
// declarations and derived relations when it checks), reporting errors
// with a caret.
func (sh *shell) compile(sess *check.Session, text string) ([]*check.Retrieve, bool) {
	sh.n++
	name := fmt.Sprintf("[%d]", sh.n)
	return sh.compileIn(sess, name, text)
}

// compileNamed is compile for a file's text, named by its path.
func (sh *shell) compileNamed(name, text string) ([]*check.Retrieve, bool) {
	return sh.compileIn(sh.sess, name, text)
}

func (sh *shell) compileIn(sess *check.Session, name, text string) ([]*check.Retrieve, bool) {
	f, err := tquel.Parse(name, text)
	if err == nil {
		var stmts []*check.Retrieve
		stmts, err = sess.Check(f)
		if err == nil {
			if sess == sh.sess {
				sh.log = append(sh.log, query.Source{Name: name, Text: text})
			}
			return stmts, true
		}
	}
	sh.errorf("%s", sh.render(err))
	return nil, false
}

// program is the new statements with the earlier derived retrieves they
// read, in the order they ran; first is the index of the first new one.
func (sh *shell) program(stmts []*check.Retrieve) (*query.Program, int) {
	need := map[*check.Retrieve]bool{}
	var mark func(r *check.Retrieve)
	mark = func(r *check.Retrieve) {
		for _, v := range r.Vars {
			if v.From != nil && !need[v.From] {
				need[v.From] = true
				mark(v.From)
			}
		}
		for _, g := range r.Aggs {
			mark(g.Inner)
		}
	}
	for _, r := range stmts {
		mark(r)
	}
	p := &query.Program{Catalog: sh.src.Catalog()}
	for _, r := range sh.derived {
		if need[r] {
			p.Stmts = append(p.Stmts, r)
		}
	}
	first := len(p.Stmts)
	p.Stmts = append(p.Stmts, stmts...)
	for _, r := range p.Stmts {
		p.Plans = append(p.Plans, plan.Translate(r))
	}
	return p, first
}

// run executes a statement text.
func (sh *shell) run(text string) {
	if strings.TrimSpace(stripComment(text)) == ";" {
		return
	}
	stmts, ok := sh.compile(sh.sess, text)
	if !ok || len(stmts) == 0 {
		return
	}
	sh.runChecked(stmts)
}

// runChecked runs checked statements and prints their results.
func (sh *shell) runChecked(stmts []*check.Retrieve) {
	for _, r := range stmts {
		if r.Name != "" {
			sh.derived = append(sh.derived, r)
		}
	}
	prog, first := sh.program(stmts)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	start := time.Now()
	var pr *subject.Printer
	var show func(int, stream.Elem)
	if sh.src.Live() {
		pr = subject.NewPrinter(sh.out, sh.opts, stmts)
		show = func(i int, e stream.Elem) {
			if i >= first {
				pr.Elem(i-first, e)
			}
		}
		sh.notef("(running live: results print as they come; Ctrl-C stops the query)\n")
	}
	ex := sh.startExport(ctx, stmts)
	if ex != nil && show != nil {
		inner := show
		show = func(i int, e stream.Elem) {
			inner(i, e)
			if i >= first {
				ex.elem(i-first, e)
			}
		}
	}
	rec := sh.startRecord(stmts)
	if rec != nil && show != nil {
		inner := show
		show = func(i int, e stream.Elem) {
			inner(i, e)
			if i >= first {
				rec.elem(i-first, e)
			}
		}
	}
	ro := subject.RunOptions{OnElem: show}
	if pr != nil {
		ro.Progress = func(t algebra.Time) { pr.Settle(); ex.watermark(t) }
		ro.Discard = true
	}
	results, _, err := sh.src.Run(ctx, prog, ro)
	if err != nil {
		if pr != nil {
			pr.Close()
		}
		rec.finish(sh)
		ex.finish(ctx, sh)
		sh.errorf("%s", sh.render(err))
		return
	}
	if rec != nil && pr == nil {
		for i, r := range results[first:] {
			rec.table(i, r.Table)
		}
	}
	if ex != nil && pr == nil {
		for i, r := range results[first:] {
			ex.table(i, r.Table)
		}
	}
	rec.finish(sh)
	ex.finish(ctx, sh)
	if pr != nil {
		if err := pr.Close(); err != nil {
			sh.errorf("%s", sh.render(err))
		}
	} else {
		var text bytes.Buffer
		for i, r := range results[first:] {
			if i > 0 {
				fmt.Fprintln(&text)
			}
			if err := format.Write(&text, r.Table, sh.opts); err != nil {
				sh.errorf("%s", sh.render(err))
			}
		}
		sh.page(text.Bytes())
	}
	if sh.timing {
		fmt.Fprintf(sh.out, "Time: %s\n", time.Since(start).Round(time.Microsecond))
	}
}

// DefaultHistoryFile is where a session keeps the lines typed unless told
// otherwise: under $XDG_STATE_HOME, else in the home directory.
func DefaultHistoryFile() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "tqmon", "history")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".tqmon_history")
	}
	return ""
}
