package main

import (
	"os"
	"strings"

	"github.com/tqmon/tqmon/grammar/source"
)

// texts holds the source texts diagnostics may point into (query files and
// -e texts); files not here are read from disk when a diagnostic names them.
var texts = map[string]string{}

// renderError prints each positioned diagnostic as file:line:col: message
// followed by the source line and a caret; others as "tqmon: message".
func renderError(err error) string {
	var b strings.Builder
	for _, d := range source.Diagnostics(err) {
		if d.File == "" && !d.Pos.IsValid() {
			b.WriteString("tqmon: " + d.Msg + "\n")
			continue
		}
		b.WriteString(d.Error() + "\n")
		if text, ok := sourceText(d.File); ok {
			if s := source.Snippet(text, d.Pos); s != "" {
				b.WriteString(s + "\n")
			}
		}
	}
	return b.String()
}

func sourceText(name string) (string, bool) {
	if t, ok := texts[name]; ok {
		return t, true
	}
	if name == "" {
		return "", false
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return "", false
	}
	texts[name] = string(data)
	return texts[name], true
}
