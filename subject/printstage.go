package subject

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/store/record"
)

// A live run prints on a goroutine of its own: the run's goroutine (the
// network) appends each result element, and each watermark, to a batch
// and hands full batches over — it never formats a row — so that the
// monitor's work per event is shared between two threads, not done by
// one (a kernel consumer keeping up with a one-core producer on a
// two-core machine). Elements and watermarks reach the printer, the
// results database and the exporters in the order the run made them. At
// most printBatches batches of printBatch items wait: a printer that
// falls behind (a slow terminal) holds the run back, as printing in line
// did, rather than the results piling up.
const (
	printBatch   = 1024
	printBatches = 4
)

// printItem is a result element of statement i, or (settle) a
// watermark at t.
type printItem struct {
	i      int
	e      stream.Elem
	settle bool
	t      algebra.Time
}

type printStage struct {
	cur  []printItem
	full chan []printItem
	free chan []printItem
	done chan struct{}
}

// startPrinting starts the printing goroutine, which calls each for the
// items in order.
func startPrinting(each func([]printItem)) *printStage {
	ps := &printStage{full: make(chan []printItem, printBatches), free: make(chan []printItem, printBatches+2), done: make(chan struct{})}
	go func() {
		defer close(ps.done)
		for b := range ps.full {
			each(b)
			clear(b)
			select {
			case ps.free <- b[:0]:
			default:
			}
		}
	}()
	return ps
}

// elem queues a result element.
func (ps *printStage) elem(i int, e stream.Elem) {
	ps.add(printItem{i: i, e: e})
	if len(ps.cur) >= printBatch {
		ps.send()
	}
}

// settle queues a watermark, and hands the batch over: what settled goes
// out now, not when a batch fills.
func (ps *printStage) settle(t algebra.Time) {
	ps.add(printItem{settle: true, t: t})
	ps.send()
}

func (ps *printStage) add(it printItem) {
	if ps.cur == nil {
		select {
		case ps.cur = <-ps.free:
		default:
			ps.cur = make([]printItem, 0, printBatch)
		}
	}
	ps.cur = append(ps.cur, it)
}

func (ps *printStage) send() {
	if len(ps.cur) > 0 {
		ps.full <- ps.cur
		ps.cur = nil
	}
}

// stop hands over what is queued and waits until everything is printed.
func (ps *printStage) stop() {
	ps.send()
	close(ps.full)
	<-ps.done
}

// LiveOutput takes a live run's results to a Printer — and to the results
// database, an exporter and a checkpoint, when set — on a goroutine of
// its own (see
// printStage): Elem and Settle are the run's OnElem and Progress; Wait,
// once the run returned, waits until all is printed (more calls do
// nothing).
type LiveOutput struct {
	ps      *printStage
	stopped bool
}

// NewLiveOutput starts printing on p (and feeding results and export,
// and committing to checkpoint at each watermark, those that are set).
func NewLiveOutput(p *Printer, results *record.ResultDB, export Exporter, checkpoint Checkpoint) *LiveOutput {
	return &LiveOutput{ps: startPrinting(func(items []printItem) {
		for len(items) > 0 {
			// The elements up to a watermark and the watermark: printed
			// and written out, so that at the watermark the printer's
			// bytes and marks are exactly what precedes it.
			k := 0
			for k < len(items) && !items[k].settle {
				k++
			}
			seg := items[:min(k+1, len(items))]
			p.elems(seg)
			for _, it := range seg {
				if it.settle {
					if checkpoint != nil {
						n, marks := p.written()
						checkpoint.Commit(n, marks, it.t)
					}
					if export != nil {
						export.Watermark(it.t)
					}
					continue
				}
				if results != nil {
					results.Elem(it.i, it.e)
				}
				if export != nil {
					export.Elem(it.i, it.e)
				}
			}
			items = items[len(seg):]
		}
	})}
}

// Elem queues a result element of statement i.
func (o *LiveOutput) Elem(i int, e stream.Elem) { o.ps.elem(i, e) }

// Settle queues a watermark: what is printed before it goes out.
func (o *LiveOutput) Settle(t algebra.Time) { o.ps.settle(t) }

// Wait hands over what is queued and waits until it is printed.
func (o *LiveOutput) Wait() {
	if !o.stopped {
		o.stopped = true
		o.ps.stop()
	}
}
