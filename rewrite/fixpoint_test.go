package rewrite_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/rewrite"
)

// TestFixpointInLists rewrites every query of one class — a join on a
// sensor's flag holder, in-lists of constants on the other side, and
// inequalities and constants on the flag holder itself — over both
// catalogs, and requires each rewrite to reach its fixpoint in few steps.
// equality-constant carries the in-lists across the join, alpha-flag-select
// moves them into the α and alpha-entity-select adds entity arguments: the
// class where rules that undo each other's work would loop ("no fixpoint").
func TestFixpointInLists(t *testing.T) {
	cats := map[string]*algebra.Catalog{
		"paper":        testkit.PaperCatalog(t),
		"differential": testkit.LoadCatalog(t, filepath.Join("..", "testdata", "differential", "spec.sdl")),
	}
	// maxSteps is far below the rewriter's own bound (1000): a query of
	// this class needs a few dozen steps; more means rules undoing each
	// other for a while before the round check stops them.
	const maxSteps = 150
	n := 0
	for cname, cat := range cats {
		for _, vRel := range []string{"SendMessage", "Waiting"} {
			v := cat.Lookup(vRel)
			flag := v.Attrs[v.FlagHolder]
			ty := flag.Type.Entity
			k := func(i int) string { return fmt.Sprintf("%q", fmt.Sprintf("%c%d", ty[0], i)) }
			for _, uRel := range []string{"SendMessage", "Waiting", "Process", "Mailbox"} {
				u := cat.Lookup(uRel)
				for _, a := range u.Attrs {
					if a.Type.Kind != algebra.KindEntity || a.Type.Entity != ty {
						continue
					}
					for nk := 1; nk <= 3; nk++ {
						var in []string
						for i := 1; i <= nk; i++ {
							in = append(in, "u."+a.Name+" = "+k(i))
						}
						for _, neq := range []string{"", " and v." + flag.Name + " != " + k(1), " and v." + flag.Name + " != " + k(3)} {
							for _, also := range []string{"", " and v." + flag.Name + " = " + k(2), " and (v." + flag.Name + " = " + k(1) + " or v." + flag.Name + " = " + k(4) + ")"} {
								states := []string{""}
								if uRel == "Process" {
									states = append(states, ` and u.State = "Running"`)
								}
								for _, st := range states {
									q := fmt.Sprintf("range of u is %s\nrange of v is %s\nretrieve (X = v.%s) where (%s)%s%s%s and u.%s = v.%s",
										uRel, vRel, flag.Name, strings.Join(in, " or "), neq, also, st, a.Name, flag.Name)
									n++
									stmts := testkit.Compile(t, cat, cname, q, 0)
									res, err := rewrite.Rewrite(&rewrite.Context{Catalog: cat}, plan.WithAlphas(plan.Translate(stmts[0]), cat))
									if err != nil {
										t.Fatalf("%s:\n%s\n%v", cname, q, err)
									}
									if len(res.Steps) > maxSteps {
										t.Errorf("%s: %d steps:\n%s", cname, len(res.Steps), q)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d queries", n)
}
