package term

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gdamore/tcell/v2"

	"github.com/tqmon/tqmon/display/draw"
)

// Canvas draws on a tcell screen.
type Canvas struct {
	Screen tcell.Screen
}

func (c Canvas) Size() (int, int) { return c.Screen.Size() }

func (c Canvas) Set(x, y int, r rune, st draw.Style) {
	c.Screen.SetContent(x, y, r, nil, Style(st))
}

// Style is the tcell style of a draw.Style.
func Style(st draw.Style) tcell.Style {
	s := tcell.StyleDefault
	if st.Fg != draw.Default {
		s = s.Foreground(tcell.PaletteColor(st.Fg.Index()))
	}
	if st.Bg != draw.Default {
		s = s.Background(tcell.PaletteColor(st.Bg.Index()))
	}
	return s.Bold(st.Bold).Dim(st.Dim).Reverse(st.Reverse).Blink(st.Blink)
}

// describe names a tcell style for dumps, as draw.Style.String does.
func describe(s tcell.Style) string {
	fg, bg, attr := s.Decompose()
	var parts []string
	colour := func(what string, c tcell.Color) {
		if c == tcell.ColorDefault || !c.Valid() {
			return
		}
		if c&tcell.ColorIsRGB != 0 {
			parts = append(parts, fmt.Sprintf("%s=#%06x", what, c.Hex()))
			return
		}
		parts = append(parts, what+"="+strconv.Itoa(int(c-tcell.ColorValid)))
	}
	colour("fg", fg)
	colour("bg", bg)
	for _, a := range []struct {
		m    tcell.AttrMask
		name string
	}{{tcell.AttrBold, "bold"}, {tcell.AttrDim, "dim"}, {tcell.AttrReverse, "reverse"}, {tcell.AttrBlink, "blink"}} {
		if attr&a.m != 0 {
			parts = append(parts, a.name)
		}
	}
	if len(parts) == 0 {
		return "plain"
	}
	return strings.Join(parts, " ")
}

// Dump renders what a simulation screen shows (after Show) as text, in
// draw.Dump's form.
func Dump(s tcell.SimulationScreen) string {
	cells, w, h := s.GetContents()
	return draw.Dump(w, h, func(x, y int) (rune, string) {
		c := cells[y*w+x]
		r := ' '
		if len(c.Runes) > 0 {
			r = c.Runes[0]
		}
		return r, describe(c.Style)
	})
}

// Text is what a simulation screen shows (after Show), one line per row.
func Text(s tcell.SimulationScreen) string {
	cells, w, h := s.GetContents()
	var b strings.Builder
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r := ' '
			if c := cells[y*w+x]; len(c.Runes) > 0 {
				r = c.Runes[0]
			}
			b.WriteRune(r)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
