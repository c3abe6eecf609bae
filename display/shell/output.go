package shell

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/term"
)

// Where results go: stdout, or the file \o names; through $PAGER when they
// are longer than the terminal (psql's rules: interactive sessions only,
// output to the terminal only, \pset pager off turns it off).

// setOutput is \o: results (and the other output) go to FILE, or back to
// stdout without one. The file is created afresh (truncated), as psql's.
func (sh *shell) setOutput(path string) {
	sh.closeOutput()
	if path == "" {
		fmt.Fprintln(sh.out, "Output goes to the standard output.")
		return
	}
	f, err := os.Create(path)
	if err != nil {
		sh.errorf("\\o: %v\n", err)
		return
	}
	fmt.Fprintf(sh.out, "Output goes to %s (\\o alone brings it back).\n", path)
	sh.out.Flush()
	sh.outFile = f
	sh.out = bufio.NewWriter(f)
}

// closeOutput flushes and closes \o's file, if any, and sends output to
// stdout again.
func (sh *shell) closeOutput() {
	if sh.outFile == nil {
		return
	}
	if err := sh.out.Flush(); err != nil {
		sh.errorf("\\o: %v\n", err)
	}
	if err := sh.outFile.Close(); err != nil {
		sh.errorf("\\o: %v\n", err)
	}
	sh.outFile = nil
	sh.out = bufio.NewWriter(sh.stdout)
}

// setPset is \pset: only the pager is settable (on, off, or a toggle).
func (sh *shell) setPset(arg string) {
	name, val, _ := strings.Cut(arg, " ")
	if name != "pager" {
		sh.errorf("\\pset %s: only \\pset pager [on|off] is known\n", name)
		return
	}
	on, ok := toggle(sh.pager, strings.TrimSpace(val))
	if !ok {
		sh.errorf("\\pset pager %s: want on or off\n", val)
		return
	}
	sh.pager = on
	fmt.Fprintf(sh.out, "Pager is %s.\n", onOff(on))
}

// setExpanded is \x: tuples print as blocks of "attribute | value" lines.
func (sh *shell) setExpanded(arg string) {
	on, ok := toggle(sh.opts.Expanded, arg)
	if !ok {
		sh.errorf("\\x %s: want on or off\n", arg)
		return
	}
	sh.opts.Expanded = on
	fmt.Fprintf(sh.out, "Expanded display is %s.\n", onOff(on))
}

// toggle reads an on/off argument; none flips cur.
func toggle(cur bool, arg string) (bool, bool) {
	switch arg {
	case "":
		return !cur, true
	case "on":
		return true, true
	case "off":
		return false, true
	}
	return cur, false
}

func onOff(b bool) string { return map[bool]string{true: "on", false: "off"}[b] }

// page writes a statement's results: through $PAGER (less when unset) if
// the session is interactive, the pager on, output going to a terminal
// and the text taller than it; else straight out. A pager that fails to
// start leaves the text printed as usual.
func (sh *shell) page(text []byte) {
	if !sh.interactive || !sh.pager || sh.outFile != nil {
		sh.out.Write(text)
		return
	}
	f, ok := sh.stdout.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		sh.out.Write(text)
		return
	}
	_, height, err := term.GetSize(int(f.Fd()))
	if err != nil || bytes.Count(text, []byte("\n")) < height-1 {
		sh.out.Write(text)
		return
	}
	pager := sh.pagerCmd
	if pager == "" {
		pager = "less"
	}
	sh.out.Flush()
	cmd := exec.Command("/bin/sh", "-c", pager)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(text), f, sh.errw
	if err := cmd.Run(); err != nil {
		sh.notef("(pager %q: %v)\n", pager, err)
		sh.out.Write(text)
	}
}
