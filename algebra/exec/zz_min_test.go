package exec_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/internal/testkit"
)

func TestZZMinRatio(t *testing.T) {
	h := benchHistory(t, 20000, 50)
	stmts := testkit.Compile(t, h.Catalog, "q", benchSelectProject, 0)
	f := newFusedSelectProject(h)
	rows := func(o exec.Options) {
		net, _ := exec.Build(h.Catalog, stmts, []plan.Node{plan.Translate(stmts[0])}, o)
		net.RunHistory(h)
		net.Stmts[0].Result.Table()
	}
	var ti, tr, tf []time.Duration
	for range 25 {
		s := time.Now()
		rows(exec.Options{})
		ti = append(ti, time.Since(s))
		s = time.Now()
		f.run()
		tf = append(tf, time.Since(s))
		s = time.Now()
		rows(exec.Options{NoColumnar: true})
		tr = append(tr, time.Since(s))
	}
	slices.Sort(ti); slices.Sort(tf); slices.Sort(tr)
	t.Logf("min: columnar %v rows %v fused %v  ratio fused/columnar %.2f; median: %v %v %v ratio %.2f", ti[0], tr[0], tf[0], tf[0].Seconds()/ti[0].Seconds(), ti[12], tr[12], tf[12], tf[12].Seconds()/ti[12].Seconds())
}
