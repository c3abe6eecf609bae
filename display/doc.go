// Package display owns what results look like. Sub-package format writes
// result relations as aligned tables, CSV or JSON Lines; the animated
// terminal view (tcell) will live here too.
package display
