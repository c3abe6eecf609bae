package rewrite_test

import (
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/rewrite"
)

// BenchmarkRewrite times the rewriter's fixpoint over every query of the
// differential corpora: live (plans with α operators, Rewrite) and stored
// (plans over stored relations, RewriteStored).
func BenchmarkRewrite(b *testing.B) {
	root := filepath.Join("..", "testdata", "differential")
	cat := catalog(b, filepath.Join(root, "spec.sdl"))
	var stmts []*check.Retrieve
	for _, f := range []string{"queries.tq", "rules.tq", "timeslice.tq"} {
		for _, q := range readCorpus(b, filepath.Join(root, f)) {
			stmts = append(stmts, compile(b, cat, q.name, q.text, 0)...)
		}
	}
	ctx := &rewrite.Context{Catalog: cat}
	b.Run("live", func(b *testing.B) {
		for b.Loop() {
			for _, s := range stmts {
				if _, err := rewrite.Rewrite(ctx, plan.WithAlphas(plan.Translate(s), cat)); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("stored", func(b *testing.B) {
		for b.Loop() {
			for _, s := range stmts {
				if _, err := rewrite.RewriteStored(ctx, plan.Translate(s)); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
