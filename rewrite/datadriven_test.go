package rewrite_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/rewrite"
	"github.com/tqmon/tqmon/store/history"
)

// TestDataDriven runs the files under testdata/: one per rule class, one
// for the aggregate rules (of the traditional class) and one for the
// paper's queries. Commands:
//
//	rewrite [spec=paper|differential|fleet]   the initial plan, the variables the
//	                                    checker marked existential (when
//	                                    any), each rule applied (name: plan
//	                                    after), the final tree
//	explain                             rewrite.Explain over the paper
//	                                    example history (with estimates)
//	store [spec=…]                      the plan over stored relations and
//	                                    each scan rule applied (scan_test.go)
//	place [spec=…]                      the final plan at the monitor
//	                                    (before), the rule "resident plans"
//	                                    (PlaceProgram, the statements
//	                                    together) and where each
//	                                    operator runs (after)
//
// Regenerate the expected output with: go test ./rewrite -run DataDriven -rewrite
func TestDataDriven(t *testing.T) {
	specs := map[string]*algebra.Catalog{
		"paper":        testkit.PaperCatalog(t),
		"differential": testkit.LoadCatalog(t, filepath.Join("..", "testdata", "differential", "spec.sdl")),
		"fleet":        fleetCatalog(t),
	}
	paperHist, err := history.Load(filepath.Join("..", "testdata", "paper"))
	if err != nil {
		t.Fatal(err)
	}
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			cat := specs["paper"]
			for _, arg := range d.CmdArgs {
				if arg.Key == "spec" {
					cat = specs[arg.Vals[0]]
				}
			}
			stmts := testkit.Compile(t, cat, d.Pos, d.Input, 0)
			if d.Cmd == "store" {
				return storePlans(t, cat, stmts)
			}
			// place: the program's statements are placed together.
			var pl rewrite.ProgramPlacement
			if d.Cmd == "place" {
				var finals []plan.Node
				for _, s := range stmts {
					res, err := rewrite.Rewrite(&rewrite.Context{Catalog: cat}, plan.WithAlphas(plan.Translate(s), cat))
					if err != nil {
						return err.Error()
					}
					finals = append(finals, res.Final)
				}
				pl = rewrite.PlaceProgram(cat, finals...)
			}
			var b strings.Builder
			for i, s := range stmts {
				if i > 0 {
					b.WriteString("\n")
				}
				res, err := rewrite.Rewrite(&rewrite.Context{Catalog: cat}, plan.WithAlphas(plan.Translate(s), cat))
				if err != nil {
					return err.Error()
				}
				switch d.Cmd {
				case "rewrite":
					fmt.Fprintf(&b, "initial: %s\n", plan.String(res.Initial))
					if ex := existentialNames(s); ex != "" {
						fmt.Fprintf(&b, "existential: %s\n", ex)
					}
					for _, st := range res.Steps {
						fmt.Fprintf(&b, "%s: %s\n", st.Rule, plan.String(st.After))
					}
					b.WriteString("final:\n" + plan.Tree(res.Final))
				case "explain":
					b.WriteString(rewrite.Explain(res, paperHist))
				case "place":
					b.WriteString("before:\n" + plan.Tree(res.Final))
					fmt.Fprintf(&b, "placement: %s\nafter:\n%s", pl, rewrite.PlacedTree(pl, res.Final))
				default:
					t.Fatalf("%s: unknown command %s", d.Pos, d.Cmd)
				}
			}
			return b.String()
		})
	})
}

// existentialNames are the names of the variables the checker marked
// existential in s, space-separated.
func existentialNames(s *check.Retrieve) string {
	var names []string
	for i, v := range s.Vars {
		if s.Exists != nil && s.Exists[i] {
			names = append(names, v.Name)
		}
	}
	return strings.Join(names, " ")
}

// fleetCatalog is the catalog of a fleet of two hosts, web-1 and web-2,
// that both run the paper's example (remote.FleetCatalog).
func fleetCatalog(t *testing.T) *algebra.Catalog {
	text := testkit.ReadFile(t, filepath.Join("..", "testdata", "paper", "os.sdl"))
	cat, _, err := remote.FleetCatalog([]*wire.Hello{{Name: "web-1", SDL: text}, {Name: "web-2", SDL: text}}, true)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}
