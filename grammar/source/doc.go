// Package source owns positions and diagnostics for every tqmon language:
// TQuel queries, sensor descriptions, display specs and CSV histories all
// report errors as "file:line:col: message".
//
// A File is a named text with its line table. A Pos is a line and a
// column; it resolves through its File to a byte offset (File.Offset), so
// front ends cut statement texts by position. A diagnostic (Error) made
// through its File (File.Errorf, ErrorList.AddIn) carries the text, so it
// shows its own source line with a caret (Error.Snippet): nobody keeps
// texts around to print diagnostics.
package source
