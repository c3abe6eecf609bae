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

//go:embed os.display
var paperSpec string

//go:embed resumed_by_p1.tq
var paperQuery string

// PaperSpec returns the paper's display: processors as boxes holding the
// processes running on them, processes as circles shaded by state,
// mailboxes as ovals, waits and sends as arrows, ResumedbyP1 flashing,
// past states fading over 5 s, a clock.
func PaperSpec() string { return paperSpec }

// PaperQuery returns the paper's ResumedbyP1 query.
func PaperQuery() string { return paperQuery }
