package shell

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/grammar/source"
)

type metaCommand struct {
	name, args, help string
	run              func(sh *shell, arg string)
}

// metaCommands returns the shell's backslash commands, in \help order (a
// function, not a variable: the table refers to \help, which lists it).
func metaCommands() []metaCommand {
	return []metaCommand{
		{`\d`, "[NAME]", "list the relations (kind and how each is collected), or describe one", (*shell).describe},
		{`\explain`, "QUERY", "show the plan before and after rewriting and what each sensor would enable", (*shell).explain},
		{`\sensors`, "", "the sensors: what the last live query enabled, received and lost", func(sh *shell, _ string) { fmt.Fprint(sh.out, sh.src.Sensors()) }},
		{`\format`, "table|csv|jsonl", "how results print", (*shell).setFormat},
		{`\x`, "[on|off]", "expanded display: each tuple as lines of attribute | value", (*shell).setExpanded},
		{`\o`, "[FILE]", "send results to FILE (created afresh); \\o alone: back to the standard output", (*shell).setOutput},
		{`\pset`, "pager [on|off]", "page results taller than the terminal through $PAGER (default less)", (*shell).setPset},
		{`\time`, "auto|clock|rfc3339|ns", "how times print", (*shell).setTime},
		{`\timing`, "", "toggle printing how long each statement took", func(sh *shell, _ string) {
			sh.timing = !sh.timing
			fmt.Fprintf(sh.out, "Timing is %s.\n", map[bool]string{true: "on", false: "off"}[sh.timing])
		}},
		{`\display`, "[SPEC]", "choose the display spec \\view shows (default: the paper's)", (*shell).setDisplay},
		{`\view`, "[SPEED]", "switch to the animated view of the session's statements; q comes back", (*shell).view},
		{`\record`, "[DB|off]", "store the results of named retrieves in the database DB", (*shell).setRecord},
		{`\param`, "NAME=VALUE", "set the value of $NAME in later statements", (*shell).setParam},
		{`\i`, "FILE", "run the statements in FILE", (*shell).include},
		{`\help`, "", "this help, and a reminder of TQuel", func(sh *shell, _ string) { sh.help() }},
		{`\?`, "", "the same as \\help", func(sh *shell, _ string) { sh.help() }},
		{`\q`, "", "quit (exit and quit, alone on a line, too)", func(sh *shell, _ string) { sh.quit = true }},
	}
}

func (sh *shell) meta(text string) {
	name, arg, _ := strings.Cut(text, " ")
	arg = strings.TrimSpace(arg)
	for _, m := range metaCommands() {
		if m.name == name {
			m.run(sh, arg)
			return
		}
	}
	sh.errorf("unknown command %s: \\help lists them\n", name)
}

func (sh *shell) help() {
	fmt.Fprintln(sh.out, "Meta commands:")
	for _, m := range metaCommands() {
		fmt.Fprintf(sh.out, "  %-28s %s\n", strings.TrimSpace(m.name+" "+m.args), m.help)
	}
	fmt.Fprint(sh.out, `
TQuel (see docs/tquel.md):
  range of VAR is RELATION
  retrieve [into NAME] (target, ...) [valid at E | valid from E to E] [where Q] [when P]
  targets: NAME = expr, VAR.ATTR, VAR.all; aggregates: count(x [by b] [for ever | for each 10s] [where q])
  when predicates: X precede Y, X overlap Y, X equal Y; X: a variable, begin of X, end of X, "2:00:05"
A statement runs at ";" or a blank line. Ctrl-C stops a running query; \q, exit or quit quits.
`)
}

// describe lists the relations, or one relation's schema.
func (sh *shell) describe(name string) {
	cat := sh.sess.Catalog()
	if name != "" {
		r := cat.Lookup(name)
		if r == nil {
			sh.errorf("no relation %s%s\n", name, didYouMean(name, sh.relationNames()))
			return
		}
		fmt.Fprintf(sh.out, "%s\n", r.Signature())
		var rows [][]string
		for i, a := range r.Attrs {
			role := ""
			if a.Role != algebra.RoleNone {
				role = a.Role.String()
			}
			if i == r.FlagHolder {
				role = strings.TrimSpace(role + " (holds the enable flag)")
			}
			rows = append(rows, []string{a.Name, a.Type.String(), role})
		}
		sh.facts([]string{"Attribute", "Type", "Role"}, rows)
		return
	}
	var rows [][]string
	for _, r := range append(slices.Clone(cat.Relations), cat.Builtins()...) {
		how := r.Strategy.String()
		if r.Builtin {
			how = "built in: the observation"
		} else if r.Derived {
			how = "derived in this session"
		} else if r.Class == algebra.ClassEntity {
			how = "always (entity source)"
		}
		var attrs []string
		for _, a := range r.Attrs {
			attrs = append(attrs, a.Name)
		}
		rows = append(rows, []string{r.Name, r.Class.String(), how, strings.Join(attrs, ", ")})
	}
	sh.facts([]string{"Relation", "Kind", "Collected", "Attributes"}, rows)
	fmt.Fprintln(sh.out, "Clock and Clock[n] are built in (an event every n base periods).")
}

// facts prints rows that are not tuples (a listing, a schema).
func (sh *shell) facts(head []string, rows [][]string) {
	if err := format.WriteFacts(sh.out, head, rows, sh.opts); err != nil {
		sh.errorf("%v\n", err)
	}
}

// didYouMean names the closest of cands, if any is close: no list of
// them (\d alone lists them).
func didYouMean(name string, cands []string) string {
	if best, ok := source.Closest(name, cands); ok {
		return " (did you mean " + best + "?)"
	}
	return ""
}

// relationNames lists the relations a query may range over.
func (sh *shell) relationNames() []string {
	names := []string{"Clock"}
	for _, r := range append(slices.Clone(sh.sess.Catalog().Relations), sh.sess.Catalog().Builtins()...) {
		names = append(names, r.Name)
	}
	sort.Strings(names)
	return names
}

func (sh *shell) catalog() *algebra.Catalog { return sh.sess.Catalog() }

// rangeVars maps the range variables in scope — the session's and those
// declared in the statement being typed (and on the current line) — to
// their relations.
func (sh *shell) rangeVars(current string) map[string]string {
	m := sh.sess.RangeVars()
	for _, d := range rangeDecl.FindAllStringSubmatch(sh.pending()+"\n"+current, -1) {
		m[d[1]] = d[2]
	}
	return m
}

// explain shows a query's plans without running it (nor keeping its
// declarations).
func (sh *shell) explain(text string) {
	if text == "" {
		sh.errorf("\\explain needs a query: \\explain retrieve (...) ...\n")
		return
	}
	// Declarations typed before the command (a statement not yet ended)
	// count too.
	stmts, ok := sh.compile(sh.sess.Clone(), sh.pending()+text)
	if !ok {
		return
	}
	prog, first := sh.program(stmts)
	if err := sh.src.Explain(sh.out, prog, first, false); err != nil {
		sh.errorf("%s", sh.render(err))
	}
}

func (sh *shell) setFormat(arg string) {
	k, err := format.ParseKind(arg)
	if err != nil {
		sh.errorf("%v\n", err)
		return
	}
	sh.opts.Kind = k
	fmt.Fprintf(sh.out, "Output format is %s.\n", arg)
}

func (sh *shell) setTime(arg string) {
	tf, err := algebra.ParseTimeFormat(arg)
	if err != nil {
		sh.errorf("%v\n", err)
		return
	}
	tz := "utc" // --tz stays
	if sh.opts.Time&algebra.TimeLocal != 0 {
		tz = "local"
	}
	sh.opts.Time, _ = algebra.WithTZ(tf, tz)
	fmt.Fprintf(sh.out, "Times print as %s.\n", arg)
}

func (sh *shell) setParam(arg string) {
	name, val, ok := strings.Cut(arg, "=")
	name = strings.TrimPrefix(strings.TrimSpace(name), "$")
	if !ok || name == "" {
		sh.errorf("\\param NAME=VALUE\n")
		return
	}
	sh.params[name] = strings.TrimSpace(val)
	sh.sess.SetParams(sh.params)
	fmt.Fprintf(sh.out, "$%s = %s\n", name, strings.TrimSpace(val))
}

func (sh *shell) include(path string) {
	text, err := source.ReadFile(path, nil)
	if err != nil {
		sh.errorf("%v\n", err)
		return
	}
	stmts, ok := sh.compileNamed(path, text)
	if !ok || len(stmts) == 0 {
		return
	}
	sh.runChecked(stmts)
}
