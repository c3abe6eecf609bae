// Package source owns positions and diagnostics for every tqmon language:
// TQuel queries, sensor descriptions, display specs and CSV histories all
// report errors as "file:line:col: message", and the CLI shows the source line
// with a caret (Snippet).
package source
