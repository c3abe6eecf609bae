package main

import (
	"strings"

	"github.com/tqmon/tqmon/grammar/source"
)

// renderError prints each positioned diagnostic as file:line:col: message
// followed by its source line and a caret, when it carries its text; others
// as "tqmon: message".
func renderError(err error) string {
	var b strings.Builder
	for _, d := range source.Diagnostics(err) {
		if d.File == "" && !d.Pos.IsValid() {
			b.WriteString("tqmon: " + d.Msg + "\n")
			continue
		}
		b.WriteString(d.Error() + "\n")
		if s := d.Snippet(); s != "" {
			b.WriteString(s + "\n")
		}
	}
	return b.String()
}
