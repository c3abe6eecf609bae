package shell

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// tquelKeywords are completed at the start of a word (lower case).
var tquelKeywords = []string{
	"range", "of", "is", "retrieve", "into", "unique", "valid", "at", "from", "to",
	"where", "when", "as", "and", "or", "not", "begin", "end", "precede", "overlap",
	"equal", "extend", "by", "for", "each", "ever", "instant", "now",
	"count", "countU", "sum", "sumU", "avg", "avgU", "min", "max", "any", "stddev", "percentile", "histogram",
}

var rangeDecl = regexp.MustCompile(`(?i)\brange\s+of\s+([A-Za-z_][A-Za-z0-9_]*)\s+is\s+([A-Za-z_][A-Za-z0-9_]*)`)

// completer completes TQuel words and meta commands from what the session
// knows: keywords, relation names (after "is"), range variables (declared
// in the session or earlier in the statement being typed) and their
// attributes (after "VAR.").
type completer struct{ sh *shell }

func (c completer) Do(line []rune, pos int) ([][]rune, int) {
	text := string(line[:pos])
	if strings.HasPrefix(strings.TrimLeft(text, " \t"), `\`) {
		return c.meta(strings.TrimLeft(text, " \t"))
	}
	start := len(text)
	for start > 0 && isWordByte(text[start-1]) {
		start--
	}
	word := text[start:]
	before := strings.Fields(text[:start])
	prev := ""
	if len(before) > 0 {
		prev = strings.ToLower(before[len(before)-1])
	}
	var cands []string
	if v, attr, ok := strings.Cut(word, "."); ok {
		rel := c.sh.rangeVars(text)[v]
		if r := c.sh.catalog().Lookup(rel); r != nil {
			for _, a := range r.Attrs {
				cands = append(cands, v+"."+a.Name)
			}
			cands = append(cands, v+".all")
		}
		_ = attr
	} else if prev == "is" {
		cands = c.sh.relationNames()
	} else if prev == "of" {
		return nil, 0 // a new variable's name
	} else {
		cands = append(cands, tquelKeywords...)
		for v := range c.sh.rangeVars(text) {
			cands = append(cands, v)
		}
	}
	return suffixes(cands, word, true), len([]rune(word))
}

// meta completes a meta command and its argument.
func (c completer) meta(text string) ([][]rune, int) {
	cmd, arg, hasArg := strings.Cut(text, " ")
	if !hasArg {
		var names []string
		for _, m := range metaCommands() {
			names = append(names, m.name)
		}
		return suffixes(names, cmd, false), len([]rune(cmd))
	}
	arg = strings.TrimLeft(arg, " ")
	var cands []string
	switch cmd {
	case `\d`:
		cands = c.sh.relationNames()
	case `\format`:
		cands = []string{"table", "csv", "jsonl"}
	case `\time`:
		cands = []string{"auto", "clock", "rfc3339", "ns"}
	case `\i`:
		cands = files(arg)
	}
	return suffixes(cands, arg, false), len([]rune(arg))
}

func files(prefix string) []string {
	matches, _ := filepath.Glob(prefix + "*")
	var out []string
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.IsDir() {
			m += "/"
		}
		out = append(out, m)
	}
	return out
}

func isWordByte(b byte) bool {
	return b == '_' || b == '.' || b == '$' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// suffixes returns what completes prefix to each candidate that has it
// (keywords case-insensitively), sorted and without duplicates.
func suffixes(cands []string, prefix string, fold bool) [][]rune {
	seen := map[string]bool{}
	var out []string
	for _, c := range cands {
		ok := strings.HasPrefix(c, prefix)
		if !ok && fold && strings.HasPrefix(strings.ToLower(c), strings.ToLower(prefix)) && prefix == strings.ToLower(prefix) {
			ok = true
		}
		if !ok || seen[c] {
			continue
		}
		seen[c] = true
		out = append(out, c)
	}
	sort.Strings(out)
	res := make([][]rune, len(out))
	for i, c := range out {
		res[i] = []rune(c[len(prefix):])
	}
	return res
}
