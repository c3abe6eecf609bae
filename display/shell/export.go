package shell

import (
	"context"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/subject"
)

// Exporter is what Config.Export starts for one statement's results
// (display/export's Set is one): fed as the statement runs — elements
// and watermarks live, whole tables from a recording — and closed after
// it.
type Exporter interface {
	subject.Exporter
	Close(ctx context.Context) error
}

// shellExport feeds a statement's results to its exporter (nil: none).
type shellExport struct{ x Exporter }

// startExport starts the exporters of the statements about to run (their
// results in order), reporting a failure.
func (sh *shell) startExport(ctx context.Context, stmts []*check.Retrieve) *shellExport {
	if sh.export == nil {
		return nil
	}
	rels := make([]*algebra.Relation, len(stmts))
	for i, r := range stmts {
		rels[i] = r.Result
	}
	x, err := sh.export(ctx, rels)
	if err != nil {
		sh.errorf("%s", sh.render(err))
		return nil
	}
	return &shellExport{x: x}
}

func (e *shellExport) elem(i int, el stream.Elem) {
	if e != nil {
		e.x.Elem(i, el)
	}
}

func (e *shellExport) watermark(t algebra.Time) {
	if e != nil {
		e.x.Watermark(t)
	}
}

func (e *shellExport) table(i int, t *algebra.Table) {
	if e != nil {
		e.x.Table(i, t)
	}
}

// finish closes the exporters, reporting their errors.
func (e *shellExport) finish(ctx context.Context, sh *shell) {
	if e == nil {
		return
	}
	if err := e.x.Close(ctx); err != nil {
		sh.errorf("%s", sh.render(err))
	}
}
