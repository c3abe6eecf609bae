package source

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Pos is a place in a source text. Line and Col are 1-based; Col counts
// characters (runes), not bytes. The zero Pos means "no position".
type Pos struct {
	Line, Col int
}

// IsValid reports whether p names a place.
func (p Pos) IsValid() bool { return p.Line > 0 }

func (p Pos) String() string {
	if !p.IsValid() {
		return "-"
	}
	return fmt.Sprintf("%d:%d", p.Line, p.Col)
}

// Before reports whether p comes before q.
func (p Pos) Before(q Pos) bool {
	return p.Line < q.Line || (p.Line == q.Line && p.Col < q.Col)
}

// Error is a diagnostic at a place in a named source: a spec, a query, a
// history file or a command-line expression.
type Error struct {
	File string
	Pos  Pos
	Msg  string
	// Src is the text Pos points into, when known: Snippet shows its line.
	Src *File
	// Err is the error the diagnostic reports, when it wraps one (a
	// runtime error raised at an expression, say).
	Err error
}

// Error renders the diagnostic as "file:line:col: message".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Pos.IsValid() {
		fmt.Fprintf(&b, "%d:%d:", e.Pos.Line, e.Pos.Col)
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap is the wrapped error, or nil.
func (e *Error) Unwrap() error { return e.Err }

// Snippet shows the line the diagnostic points into with a caret under its
// column (see File.Snippet); "" when the diagnostic has no source text.
func (e *Error) Snippet() string { return e.Src.Snippet(e.Pos) }

// Errorf makes a positioned diagnostic in a source whose text is not at
// hand (File.Errorf makes one that shows its line).
func Errorf(file string, pos Pos, format string, args ...any) *Error {
	return &Error{File: file, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// ErrorList collects diagnostics so a front end can report several per run.
type ErrorList []*Error

// Add appends a diagnostic in a source whose text is not at hand.
func (l *ErrorList) Add(file string, pos Pos, format string, args ...any) {
	*l = append(*l, Errorf(file, pos, format, args...))
}

// AddIn appends a diagnostic at pos in the source named file, whose text
// is src; src may be nil (a syntax tree not made by a parser), and the
// diagnostic then shows no line.
func (l *ErrorList) AddIn(src *File, file string, pos Pos, format string, args ...any) {
	e := Errorf(file, pos, format, args...)
	e.Src = src
	*l = append(*l, e)
}

// Len is the number of diagnostics.
func (l ErrorList) Len() int { return len(l) }

// Sort orders the diagnostics by file, then position, and removes exact
// duplicates (same place, same message).
func (l *ErrorList) Sort() {
	s := *l
	sort.SliceStable(s, func(i, j int) bool {
		a, b := s[i], s[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Pos != b.Pos {
			return a.Pos.Before(b.Pos)
		}
		return false
	})
	out := s[:0]
	for i, e := range s {
		if i > 0 && e.File == s[i-1].File && e.Pos == s[i-1].Pos && e.Msg == s[i-1].Msg {
			continue
		}
		out = append(out, e)
	}
	*l = out
}

// Error joins the diagnostics, one per line.
func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Err returns nil for an empty list and the list itself otherwise.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Unwrap exposes the individual diagnostics to errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// Diagnostics flattens err into its positioned diagnostics. An error that is
// not positioned becomes a single diagnostic without a place.
func Diagnostics(err error) []*Error {
	if err == nil {
		return nil
	}
	var l ErrorList
	if errors.As(err, &l) {
		return l
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return []*Error{{Msg: err.Error()}}
}
