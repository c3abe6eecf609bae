package source

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// File is a named source text with the byte offsets where its lines
// start, computed once. Positions resolve through it: a diagnostic that
// carries its File (Error.Src) shows its own line and caret, and the parts
// of a text between two positions are cut without scanning the text again.
//
// The methods of a nil *File describe an unnamed, empty text.
type File struct {
	name  string
	text  string
	lines []int // lines[i] is the offset of line base+i+1
	base  int   // the lines of the whole file before text's first
}

// NewFile records text under name (the name diagnostics give it).
func NewFile(name, text string) *File { return NewFileAt(name, 1, text) }

// NewFileAt records a part of a file, text, whose first line is line
// first of the file: positions are the file's. A reader that streams a
// long file keeps only the lines its diagnostics point into.
func NewFileAt(name string, first int, text string) *File {
	lines := []int{0}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			lines = append(lines, i+1)
		}
	}
	return &File{name: name, text: text, lines: lines, base: first - 1}
}

// Name is the file's name in diagnostics.
func (f *File) Name() string {
	if f == nil {
		return ""
	}
	return f.name
}

// Text is the file's text.
func (f *File) Text() string {
	if f == nil {
		return ""
	}
	return f.text
}

// Line is the text of line n (1-based) without its line break, and whether
// the file has that line.
func (f *File) Line(n int) (string, bool) {
	if f == nil {
		return "", false
	}
	n -= f.base
	if n < 1 || n > len(f.lines) {
		return "", false
	}
	start, end := f.lines[n-1], len(f.text)
	if n < len(f.lines) {
		end = f.lines[n] - 1
	}
	return strings.TrimRight(f.text[start:end], "\r"), true
}

// Offset is the byte offset of p, and whether p is inside the text (or
// just past the end of a line). Columns count runes.
func (f *File) Offset(p Pos) (int, bool) {
	if f == nil || !p.IsValid() || p.Col < 1 {
		return 0, false
	}
	line := p.Line - f.base
	if line < 1 || line > len(f.lines) {
		return 0, false
	}
	off := f.lines[line-1]
	for col := 1; col < p.Col; col++ {
		if off >= len(f.text) || f.text[off] == '\n' {
			return 0, false
		}
		_, size := utf8.DecodeRuneInString(f.text[off:])
		off += size
	}
	return off, true
}

// Cut is the text from position from up to position to; an invalid to
// means the end of the text. It is "" when from is not in the text.
func (f *File) Cut(from, to Pos) string {
	start, ok := f.Offset(from)
	if !ok {
		return ""
	}
	end := len(f.text)
	if to.IsValid() {
		if end, ok = f.Offset(to); !ok || end < start {
			return ""
		}
	}
	return f.text[start:end]
}

// Errorf makes a diagnostic at p in f.
func (f *File) Errorf(p Pos, format string, args ...any) *Error {
	return &Error{File: f.Name(), Pos: p, Msg: fmt.Sprintf(format, args...), Src: f}
}

// Wrap makes err a diagnostic at p in f; errors.Is and errors.As still
// find err.
func (f *File) Wrap(p Pos, err error) *Error {
	return &Error{File: f.Name(), Pos: p, Msg: err.Error(), Src: f, Err: err}
}

// Snippet returns the line p points into followed by a line with a caret
// under p's column, each indented by two spaces. Tabs before the column
// are kept so the caret lines up in a terminal. It returns "" when p is not
// inside the text.
func (f *File) Snippet(p Pos) string {
	if !p.IsValid() {
		return ""
	}
	src, ok := f.Line(p.Line)
	if !ok {
		return ""
	}
	var caret strings.Builder
	col := 1
	for _, r := range src {
		if col >= p.Col {
			break
		}
		if r == '\t' {
			caret.WriteByte('\t')
		} else {
			caret.WriteByte(' ')
		}
		col++
	}
	if n := utf8.RuneCountInString(src); p.Col > n+1 {
		// Past the end of the line (e.g. "unexpected end of input"):
		// point just after the last character.
		caret.WriteString(strings.Repeat(" ", p.Col-col))
	}
	return "  " + src + "\n  " + caret.String() + "^"
}
