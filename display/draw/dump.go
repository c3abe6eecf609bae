package draw

import (
	"fmt"
	"strings"
)

// Dump renders a screen as text for golden files: the characters of each
// row between '|' bars, then the same rows with one letter per cell naming
// its style ('.' for the plain style), then a legend of the letters.
// cell returns the character and a description of the style of (x, y);
// the descriptions are what the legend prints and what tells styles apart.
func Dump(w, h int, cell func(x, y int) (rune, string)) string {
	var text, styles strings.Builder
	letters := map[string]byte{}
	var legend []string
	const names = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	fmt.Fprintf(&text, "screen %dx%d\n", w, h)
	for y := 0; y < h; y++ {
		text.WriteByte('|')
		styles.WriteByte('|')
		for x := 0; x < w; x++ {
			r, st := cell(x, y)
			if r == 0 {
				r = ' '
			}
			text.WriteRune(r)
			if st == "" || st == "plain" {
				styles.WriteByte('.')
				continue
			}
			l, ok := letters[st]
			if !ok {
				l = '?'
				if len(letters) < len(names) {
					l = names[len(letters)]
				}
				letters[st] = l
				legend = append(legend, fmt.Sprintf("%c: %s", l, st))
			}
			styles.WriteByte(l)
		}
		text.WriteString("|\n")
		styles.WriteString("|\n")
	}
	return text.String() + "styles:\n" + styles.String() + "legend:\n" + strings.Join(legend, "\n") + "\n"
}

// DumpGrid is Dump of a Grid.
func DumpGrid(g *Grid) string {
	return Dump(g.W, g.H, func(x, y int) (rune, string) {
		r, st := g.At(x, y)
		return r, st.String()
	})
}
