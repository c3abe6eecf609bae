package front

import (
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/antlr4-go/antlr/v4"
)

// Literals are the token types of a generated lexer that the token filter
// checks.
type Literals struct {
	// ErrorChar catches every character no other rule takes.
	ErrorChar int
	// Number also takes a number run into letters (the grammars'
	// BAD_NUMBER), reported here.
	Number int
	// Duration is a number-unit group such as 1h30m.
	Duration int
	// String is a double-quoted string; 0 (antlr.TokenInvalidType, which
	// no lexer produces) when the language has none.
	String int
}

// Lit is what the lexical checks learned about a literal token.
type Lit struct {
	Str string // string: the value, escapes resolved
	NS  int64  // duration: nanoseconds
	Bad bool   // a lexical error was reported for the token
}

// tokenFilter sits between the generated lexer and the parser. It reports
// what the lexer lets through on purpose (stray characters, unterminated
// strings, bad escapes, malformed numbers, out-of-range durations) and
// drops stray characters, so the parser sees a clean token stream and the
// converter finds literal values in lits.
type tokenFilter struct {
	antlr.Lexer
	types   Literals
	d       *Diag
	lits    map[int]Lit // by the token's start offset
	badUTF8 bool        // the text is not valid UTF-8
}

func (f *tokenFilter) NextToken() antlr.Token {
	for {
		t := f.Lexer.NextToken()
		switch t.GetTokenType() {
		case f.types.ErrorChar:
			r, _ := utf8.DecodeRuneInString(t.GetText())
			if r == utf8.RuneError && f.badUTF8 {
				// Reported as such by Parse; invalid bytes read as U+FFFD.
				f.d.Add(TokPos(t), "invalid UTF-8 encoding")
			} else {
				f.d.Add(TokPos(t), "unexpected character %s", strconv.QuoteRune(r))
			}
			continue
		case f.types.String:
			v, off, msg := Unquote(t.GetText())
			l := Lit{Str: v}
			if msg != "" {
				p := TokPos(t)
				p.Col += off
				f.d.Add(p, "%s", msg)
				l.Bad = true
			}
			f.lits[t.GetStart()] = l
		case f.types.Number:
			if msg, isDur := CheckNumber(t.GetText()); msg != "" {
				f.d.Add(TokPos(t), "%s", msg)
				f.lits[t.GetStart()] = Lit{Bad: true}
				if isDur {
					// Meant as a duration: let the parser take it as one
					// rather than report it a second time.
					return antlr.CommonTokenFactoryDEFAULT.Create(t.GetSource(), f.types.Duration,
						t.GetText(), t.GetChannel(), t.GetStart(), t.GetStop(), t.GetLine(), t.GetColumn())
				}
			}
		case f.types.Duration:
			ns, msg := ParseDuration(t.GetText())
			l := Lit{NS: ns}
			if msg != "" {
				f.d.Add(TokPos(t), "%s", msg)
				l.Bad = true
			}
			f.lits[t.GetStart()] = l
		}
		return t
	}
}

// Unquote resolves the escapes of a string token's text (\" \\ \n \t \r).
// On a problem it returns a message and the rune offset of its place in the
// text; the value is then as good as can be made.
func Unquote(text string) (val string, off int, msg string) {
	var b strings.Builder
	rs := []rune(text)
	for i := 1; i < len(rs); i++ {
		switch c := rs[i]; c {
		case '"':
			return b.String(), off, msg
		case '\\':
			if i+1 >= len(rs) {
				return b.String(), 0, "unterminated string"
			}
			i++
			switch e := rs[i]; e {
			case '"', '\\':
				b.WriteRune(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				if msg == "" {
					off, msg = i-1, "unknown escape sequence '\\"+string(e)+"' in string"
				}
				b.WriteRune(e)
			}
		default:
			b.WriteRune(c)
		}
	}
	return b.String(), 0, "unterminated string"
}

// Quote writes s as a string token that Unquote reads back.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

var (
	numberRE       = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
	numberPrefixRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?`)
)

// CheckNumber explains a number token that is really a number run into
// letters (the grammars' BAD_NUMBER), or returns "". isDur says the text
// looks like a duration with a bad unit.
func CheckNumber(text string) (msg string, isDur bool) {
	if numberRE.MatchString(text) {
		return "", false
	}
	rest := text[len(numberPrefixRE.FindString(text)):]
	if rest != "" && strings.ContainsRune("nNuUµμmMsShH", []rune(rest)[0]) {
		return "malformed duration '" + Shorten(text) + "' (units are ns, us, ms, s, m, h)", true
	}
	return "malformed number '" + Shorten(text) + "'", false
}

var unitNS = map[string]int64{
	"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9,
}

// ParseDuration computes the nanoseconds of a duration token such as 1h30m
// or 1.5s, exactly. It returns a message when the value is not a whole
// number of nanoseconds or does not fit an int64.
func ParseDuration(text string) (int64, string) {
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
			return 0, "malformed duration '" + Shorten(text) + "'"
		}
		total.Add(total, v.Mul(v, new(big.Rat).SetInt64(mult)))
	}
	if !total.IsInt() {
		return 0, "duration '" + Shorten(text) + "' is not a whole number of nanoseconds"
	}
	n := total.Num()
	if !n.IsInt64() {
		return 0, "duration '" + Shorten(text) + "' is out of range"
	}
	return n.Int64(), ""
}
