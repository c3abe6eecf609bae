package sdl

import (
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/sdl/gen"
)

// The lexical checks mirror grammar/tquel/lex.go: both languages share the
// number and duration syntax.

// lit is what the lexical checks learned about a literal token.
type lit struct {
	ns  int64 // DURATION: nanoseconds
	bad bool  // a lexical error was reported for the token
}

// tokenFilter sits between the generated lexer and the parser. It reports
// what the lexer lets through on purpose (stray characters, malformed
// numbers, out-of-range durations) and drops stray characters, so the
// parser sees a clean token stream and the converter finds literal values
// in lits.
type tokenFilter struct {
	*gen.SDLLexer
	d       *diag
	lits    map[int]lit // by the token's start offset
	badUTF8 bool        // the text is not valid UTF-8
}

func (f *tokenFilter) NextToken() antlr.Token {
	for {
		t := f.SDLLexer.NextToken()
		switch t.GetTokenType() {
		case gen.SDLLexerERROR_CHAR:
			r, _ := utf8.DecodeRuneInString(t.GetText())
			if r == utf8.RuneError && f.badUTF8 {
				// Reported as such by Parse; invalid bytes read as U+FFFD.
				f.d.add(tokPos(t), "invalid UTF-8 encoding")
			} else {
				f.d.add(tokPos(t), "unexpected character %s", strconv.QuoteRune(r))
			}
			continue
		case gen.SDLLexerNUMBER:
			if msg, isDur := checkNumber(t.GetText()); msg != "" {
				f.d.add(tokPos(t), "%s", msg)
				f.lits[t.GetStart()] = lit{bad: true}
				if isDur {
					// Meant as a duration: let the parser take it as one
					// rather than report it a second time.
					return antlr.CommonTokenFactoryDEFAULT.Create(t.GetSource(), gen.SDLLexerDURATION,
						t.GetText(), t.GetChannel(), t.GetStart(), t.GetStop(), t.GetLine(), t.GetColumn())
				}
			}
		case gen.SDLLexerDURATION:
			ns, msg := parseDuration(t.GetText())
			l := lit{ns: ns}
			if msg != "" {
				f.d.add(tokPos(t), "%s", msg)
				l.bad = true
			}
			f.lits[t.GetStart()] = l
		}
		return t
	}
}

var (
	numberRE       = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
	numberPrefixRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?`)
)

// checkNumber explains a NUMBER token that is really a number run into
// letters (the grammar's BAD_NUMBER), or returns "". isDur says the text
// looks like a duration with a bad unit.
func checkNumber(text string) (msg string, isDur bool) {
	if numberRE.MatchString(text) {
		return "", false
	}
	rest := text[len(numberPrefixRE.FindString(text)):]
	if rest != "" && strings.ContainsRune("nNuUµμmMsShH", []rune(rest)[0]) {
		return "malformed duration '" + shorten(text) + "' (units are ns, us, ms, s, m, h)", true
	}
	return "malformed number '" + shorten(text) + "'", false
}

var unitNS = map[string]int64{
	"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9,
}

// parseDuration computes the nanoseconds of a DURATION token such as 1h30m
// or 1.5s, exactly. It returns a message when the value is not a whole
// number of nanoseconds or does not fit an int64.
func parseDuration(text string) (int64, string) {
	total := new(big.Rat)
	rest := text
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		num := rest[:i]
		rest = rest[i:]
		j := 0
		for j < len(rest) && !(rest[j] >= '0' && rest[j] <= '9') {
			j++
		}
		unit := rest[:j]
		rest = rest[j:]
		mult, ok := unitNS[unit]
		v, ok2 := new(big.Rat).SetString(num)
		if !ok || !ok2 || num == "" {
			return 0, "malformed duration '" + shorten(text) + "'"
		}
		total.Add(total, v.Mul(v, new(big.Rat).SetInt64(mult)))
	}
	if !total.IsInt() {
		return 0, "duration '" + shorten(text) + "' is not a whole number of nanoseconds"
	}
	n := total.Num()
	if !n.IsInt64() {
		return 0, "duration '" + shorten(text) + "' is out of range"
	}
	return n.Int64(), ""
}
