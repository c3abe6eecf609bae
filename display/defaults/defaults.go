// Package defaults holds what tqmon demo shows when told nothing: the
// paper's display spec and its ResumedbyP1 query (copies of
// testdata/paper/os.display and resumed_by_p1.tq, kept equal by a test),
// embedded so that the binary needs no files.
package defaults

import _ "embed"

// PaperSpecName and PaperQueryName are the names diagnostics use.
const (
	PaperSpecName  = "os.display"
	PaperQueryName = "resumed_by_p1.tq"
)

// PaperSpec is the paper's display: processors as boxes holding the
// processes running on them, processes as circles shaded by state,
// mailboxes as ovals, waits and sends as arrows, ResumedbyP1 flashing,
// past states fading over 5 s, a clock.
//
//go:embed os.display
var PaperSpec string

// PaperQuery is the paper's ResumedbyP1 query.
//
//go:embed resumed_by_p1.tq
var PaperQuery string
