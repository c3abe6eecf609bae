// Package display is the front end of the display-specification language:
// how the tuples of primitive and derived relations are drawn and animated
// on the terminal (the paper's display specification step). It owns the
// grammar (Display.g4, with the ANTLR parser generated into the gen
// subpackage by grammar/generate.sh), the syntax tree (ast.go), Parse,
// which turns a spec into a File or into positioned diagnostics, and the
// canonical printers FormatStmt and FormatFile.
//
// A spec is a list of statements:
//
//	display Processor as box label Processor order by Processor at left
//	display Process as circle label Process shade State (Running = 100%, Ready = 60%) order by Process at left
//	display Mailbox as oval label Mailbox order by Mailbox at right
//	display RunningOn as inside (Process, Processor)
//	display Waiting as arrow from Mailbox to Process
//	display SendMessage as arrow from Process to Mailbox
//	display ResumedbyP1 as flash Process for 5s
//	display QueueLength as plot Length label Mailbox for 20m
//	time animationtrace decay 5s
//	show clock
//
// Representations: icons (box, circle, oval, text, point, line), one per
// tuple, keyed by the tuple's first entity attribute; relationships between
// the icons of the entities two attributes name (inside (A, B) — A's icon
// drawn inside B's —, arrow from A to B, line from A to B); and flash or
// blink, which make the icon of the entity an attribute names flash after
// each event (for the `for` duration) or while a tuple is valid; and plot
// ATTR, which draws a numeric attribute over time (sparklines, a series per
// value of the label attribute, over the `for` span). Aspects:
// label, shade (intensity, with an optional value = N% mapping), colour
// (with an optional value = colour mapping; `color` is accepted), order by
// (ascending unless desc), at left | center | right, for DURATION. Time:
// `time animation` (the current state) or `time animationtrace` (past
// states fade out over the decay), `show clock`, `show timeline`.
//
// Parse checks syntax and literal values only (percentages, durations);
// whether relations, attributes and colours exist and aspects fit their
// representation is for the checker, display/spec.
//
// Keywords are case-insensitive, names case-sensitive; a name is only ever
// expected where it is required, so every keyword may also be used as one.
// Comments run from -- or // to the end of the line; ';' may end a
// statement. Errors are a source.ErrorList sorted by position, each
// "file:line:col: message", at most 20 then "too many errors", e.g.
//
//	os.display:2:55: unexpected ')', expected one of: name, string, number
//	os.display:3:40: a shade must be a whole percentage from 0% to 100%, not '120%'
package display
