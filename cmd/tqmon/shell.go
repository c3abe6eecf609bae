package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/ergochat/readline"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/grammar/tquel"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/subject"
)

type shellFlags struct {
	historyDir  string
	dbDir       string
	connect     []string
	token       string
	demo        bool
	kernel      bool
	target      string
	seed        uint64
	format      string
	timeFormat  string
	params      []string
	historyFile string
}

func newShellCmd(stdout, stderr io.Writer) *cobra.Command {
	var f shellFlags
	cmd := &cobra.Command{
		Use:   "shell [--history DIR | --db DB | --connect ADDR... | --demo | --kernel]",
		Short: "Ask TQuel questions interactively",
		Long: `An interactive session: type TQuel statements and meta commands, see the
results, refine, ask again. Statements may span lines; one runs when a line
ends with ";" or at a blank line. Range declarations and derived relations
("retrieve into NAME") last for the whole session.

Over a recorded history (--history) or database (--db) a query's result
prints when it is computed. Over a live system (--demo runs the paper's example system inside
the shell; --connect reaches resident monitors; --kernel is this machine's
Linux kernel, as root) results print as they are produced, until you press
Ctrl-C, which stops the query, not the shell.

Tab completes keywords, relation names (after "is"), range variables and
their attributes (after "VAR."). Line editing and history are those of
readline; the history is kept in --history-file. Type \help for the meta
commands (\d lists the relations, \explain shows what a query enables,
\q quits).`,
		Example: `  tqmon shell --history testdata/paper
  tqmon=> range of S is SendMessage
  tqmon-> range of W is Waiting
  tqmon-> retrieve ResumedbyP1 (Process = W.Process) valid at end of W
  tqmon-> where S.Mailbox = W.Mailbox and S.Process = "P1" when S precede end of W;

  # Statements from a file or a pipe run the same way, without prompts
  tqmon shell --history testdata/paper < testdata/paper/resumed_by_p1.tq

  # The paper's system, live
  tqmon shell --demo

  # This machine's kernel; $target is a process of yours
  sudo tqmon shell --kernel --target 1234`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runShell(&f, os.Stdin, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.historyDir, "history", "", "query a recorded history directory")
	fl.StringVar(&f.dbDir, "db", "", "query a recorded database (see tqmon record)")
	fl.StringArrayVar(&f.connect, "connect", nil, "query resident monitors live at ADDR (repeatable)")
	fl.StringVar(&f.token, "token", "", "shared token for residents reached over TCP")
	fl.BoolVar(&f.demo, "demo", false, "run the paper's example system inside the shell and query it live")
	fl.BoolVar(&f.kernel, "kernel", false, "query this machine's Linux kernel live (eBPF sensors; needs root)")
	fl.StringVar(&f.target, "target", "", "with --kernel: $target is this running process's pid")
	fl.Uint64Var(&f.seed, "seed", 1, "with --demo: seed of the workload")
	fl.StringVar(&f.format, "format", "table", "output format: table, csv or jsonl (\\format changes it)")
	fl.StringVar(&f.timeFormat, "time-format", "", "time format: clock (the default), rfc3339 (the default with --kernel) or ns (\\time changes it)")
	fl.StringArrayVar(&f.params, "param", nil, "NAME=VALUE: the value of $NAME in queries (repeatable; \\param sets one)")
	fl.StringVar(&f.historyFile, "history-file", defaultHistoryFile(), "where the shell keeps the lines typed (empty: nowhere)")
	return cmd
}

func defaultHistoryFile() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "tqmon", "history")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".tqmon_history")
	}
	return ""
}

// shell is one interactive session.
type shell struct {
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
}

func runShell(f *shellFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	opts, err := outputOptions(f.format, f.timeFormat, f.kernel)
	if err != nil {
		return usageErr(err)
	}
	params, err := parseParams(f.params)
	if err != nil {
		return usageErr(err)
	}
	so := subject.Options{History: f.historyDir, DB: f.dbDir, Connect: f.connect, Token: f.token,
		Demo: f.demo, Config: demo.DefaultConfig(f.seed), Background: true}
	if f.kernel {
		so.Kernel = &subject.KernelOptions{Target: f.target}
	}
	if so.Given() != 1 {
		return usageErr(errors.New("shell needs one source: --history DIR, --db DB, --connect ADDR, --demo or --kernel"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	src, err := subject.Open(ctx, so)
	cancel()
	if err != nil {
		return openErr(err)
	}
	maps.Copy(params, src.Params())
	defer src.Close()

	sh := &shell{src: src, out: bufio.NewWriter(stdout), errw: stderr, opts: opts, params: params}
	sh.sess = check.NewSession(src.Catalog(), check.Options{Params: params, Now: src.Now()})

	interactive := false
	if fd, ok := stdin.(*os.File); ok && term.IsTerminal(int(fd.Fd())) {
		interactive = true
	}
	if !interactive {
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for !sh.quit && sc.Scan() {
			sh.line(sc.Text())
		}
		if p := sh.pending(); p != "" && !sh.quit {
			sh.run(p)
		}
		return sh.out.Flush()
	}

	if f.historyFile != "" {
		os.MkdirAll(filepath.Dir(f.historyFile), 0o755)
	}
	rl, err := readline.NewFromConfig(&readline.Config{
		Prompt:            "tqmon=> ",
		HistoryFile:       f.historyFile,
		HistorySearchFold: true,
		AutoComplete:      completer{sh},
		InterruptPrompt:   "^C",
		EOFPrompt:         `\q`,
		Stdin:             stdin,
		Stdout:            stdout,
		Stderr:            stderr,
	})
	if err != nil {
		return runtimeErr(err)
	}
	defer rl.Close()
	sh.rl = rl
	fmt.Fprintf(sh.out, "tqmon shell — %s\nType TQuel statements (end with ; or a blank line), \\help for help, \\q to quit.\n", src.Describe())
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
			continue
		case errors.Is(err, io.EOF):
			if p := sh.pending(); p != "" {
				sh.run(p)
			}
			sh.quit = true
			continue
		case err != nil:
			return runtimeErr(err)
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
		sh.meta(t) // a statement being typed stays pending
		return
	}
	if t == "" {
		if p := sh.pending(); strings.TrimSpace(p) != "" {
			sh.buf.Reset()
			sh.run(p)
		}
		return
	}
	sh.buf.WriteString(line + "\n")
	if strings.HasSuffix(strings.TrimSpace(stripComment(t)), ";") {
		p := sh.pending()
		sh.buf.Reset()
		sh.run(p)
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

// errorf prints a message on stderr, keeping output ordered.
func (sh *shell) errorf(format string, args ...any) {
	sh.out.Flush()
	fmt.Fprintf(sh.errw, format, args...)
}

// compile parses and checks text in the session (committing its range
// declarations and derived relations when it checks), reporting errors
// with a caret.
func (sh *shell) compile(sess *check.Session, text string) ([]*check.Retrieve, bool) {
	sh.n++
	name := fmt.Sprintf("[%d]", sh.n)
	texts[name] = text
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
		stmts, err = sess.Check(f, text)
		if err == nil {
			if sess == sh.sess {
				sh.log = append(sh.log, query.Source{Name: name, Text: text})
			}
			return stmts, true
		}
	}
	sh.errorf("%s", renderError(err))
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
	var rels []*algebra.Relation
	for _, r := range stmts {
		rels = append(rels, r.Result)
	}
	var stream *format.Stream
	var show func(int, exec.Elem)
	if sh.src.Live() {
		stream = format.NewStream(sh.out, sh.opts, rels)
		show = func(i int, e exec.Elem) {
			if i >= first {
				subject.Stream(stream, i-first, e)
				sh.out.Flush()
			}
		}
		sh.errorf("(running live: results print as they come; Ctrl-C stops the query)\n")
	}
	rec := sh.startRecord(stmts)
	if rec != nil && show != nil {
		inner := show
		show = func(i int, e exec.Elem) {
			inner(i, e)
			if i >= first {
				rec.elem(i-first, e)
			}
		}
	}
	results, _, err := sh.src.Run(ctx, prog, subject.RunOptions{OnElem: show})
	if err != nil {
		rec.finish(sh)
		sh.errorf("%s", renderError(err))
		return
	}
	if rec != nil && stream == nil {
		for i, r := range results[first:] {
			rec.table(i, r.Table)
		}
	}
	rec.finish(sh)
	if stream != nil {
		if err := stream.Close(); err != nil {
			sh.errorf("%s", renderError(err))
		}
	} else {
		for i, r := range results[first:] {
			if i > 0 {
				fmt.Fprintln(sh.out)
			}
			if err := format.Write(sh.out, r.Table, sh.opts); err != nil {
				sh.errorf("%s", renderError(err))
			}
		}
	}
	if sh.timing {
		fmt.Fprintf(sh.out, "Time: %s\n", time.Since(start).Round(time.Microsecond))
	}
}
