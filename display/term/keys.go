package term

import (
	"github.com/gdamore/tcell/v2"

	"github.com/tqmon/tqmon/display/ui"
)

// keyOf maps a tcell key event onto a display command.
func keyOf(ev *tcell.EventKey) ui.Key {
	switch ev.Key() {
	case tcell.KeyCtrlC, tcell.KeyEscape:
		return ui.KeyQuit
	case tcell.KeyRight:
		return ui.KeyStep
	case tcell.KeyLeft:
		return ui.KeyBack
	case tcell.KeyTab:
		return ui.KeyRows
	case tcell.KeyUp:
		return ui.KeyUp
	case tcell.KeyDown:
		return ui.KeyDown
	case tcell.KeyPgUp:
		return ui.KeyPageUp
	case tcell.KeyPgDn:
		return ui.KeyPageDown
	case tcell.KeyRune:
		switch ev.Rune() {
		case ' ':
			return ui.KeyPause
		case '+', '=':
			return ui.KeyFaster
		case '-', '_':
			return ui.KeySlower
		case 't', 'T':
			return ui.KeyTimeline
		case '?', 'h':
			return ui.KeyHelp
		case 'q', 'Q':
			return ui.KeyQuit
		case 'r', 'R':
			return ui.KeyReload
		case 'z':
			return ui.KeyZoomIn
		case 'x', 'Z':
			return ui.KeyZoomOut
		case '<', ',':
			return ui.KeyBack
		case '>', '.':
			return ui.KeyForward
		case 'f':
			return ui.KeyFollow
		case 'k':
			return ui.KeyUp
		case 'j':
			return ui.KeyDown
		case 'l', 'L':
			return ui.KeyLegend
		}
	}
	return ui.KeyNone
}
