package draw

import (
	"fmt"
	"strings"
)

// Color is a terminal colour: 0 is the terminal's default, otherwise 1 +
// an index into the xterm 256-colour palette (0–15 the basic colours,
// 232–255 the grey ramp).
type Color uint16

// Default is the terminal's own colour.
const Default Color = 0

// Palette is the colour of xterm palette index i.
func Palette(i int) Color { return Color(i + 1) }

// Index is c's xterm palette index, or -1 for Default.
func (c Color) Index() int { return int(c) - 1 }

// Gray is the grey of the given intensity (0 black … 1 white) on the xterm
// grey ramp.
func Gray(level float64) Color {
	level = max(0, min(1, level))
	return Palette(232 + int(level*23+0.5))
}

// colours are the names a display spec may use.
var colours = map[string]int{
	"black": 0, "red": 1, "green": 2, "yellow": 3, "blue": 4, "magenta": 5, "cyan": 6, "white": 7,
	"gray": 244, "grey": 244, "orange": 208, "purple": 93, "pink": 213, "brown": 130,
	"brightred": 9, "brightgreen": 10, "brightyellow": 11, "brightblue": 12,
	"brightmagenta": 13, "brightcyan": 14, "brightwhite": 15,
}

// ColorNamed is the colour of a name (case-insensitive), as a spec writes it.
func ColorNamed(name string) (Color, bool) {
	i, ok := colours[strings.ToLower(name)]
	if !ok {
		return Default, false
	}
	return Palette(i), true
}

// ColorNames lists the colour names, for messages.
func ColorNames() []string {
	return []string{"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white",
		"gray", "orange", "purple", "pink", "brown", "brightred", "brightgreen", "brightyellow",
		"brightblue", "brightmagenta", "brightcyan", "brightwhite"}
}

// Cycle is the colour given to the i-th value of an attribute a colour
// aspect maps no colour to.
func Cycle(i int) Color {
	cycle := [...]int{2, 3, 6, 5, 4, 1, 208, 93}
	if i < 0 {
		i = -i
	}
	return Palette(cycle[i%len(cycle)])
}

// Style is how a cell is drawn: plain data, comparable. The zero Style is
// the terminal's default.
type Style struct {
	Fg, Bg  Color
	Bold    bool
	Dim     bool
	Reverse bool
	Blink   bool
}

func (s Style) String() string {
	var parts []string
	if s.Fg != Default {
		parts = append(parts, fmt.Sprintf("fg=%d", s.Fg.Index()))
	}
	if s.Bg != Default {
		parts = append(parts, fmt.Sprintf("bg=%d", s.Bg.Index()))
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{s.Bold, "bold"}, {s.Dim, "dim"}, {s.Reverse, "reverse"}, {s.Blink, "blink"}} {
		if f.on {
			parts = append(parts, f.name)
		}
	}
	if len(parts) == 0 {
		return "plain"
	}
	return strings.Join(parts, " ")
}
