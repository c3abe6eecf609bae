package rewrite_test

import (
	"fmt"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/internal/testkit"
)

const resumedByP1 = `range of S is SendMessage
range of W is Waiting
retrieve ResumedbyP1 (Process = W.Process)
valid at end of W
where S.Mailbox = W.Mailbox and S.Process = "P1"
when S precede end of W`

const runningOnEvery10Seconds = `range of RO is RunningOn
range of C is Clock[10]
retrieve RunningOnEvery10Seconds (Process = RO.Process, Processor = RO.Processor)
when C overlap RO`

// paperSizes are the generated systems the packet tests and benchmarks use:
// growing numbers of processes and of sends per process.
var paperSizes = []histgen.PaperConfig{
	{Seed: 1, Processors: 2, Processes: 4, Mailboxes: 4, Sends: 10, Fanout: 2},
	{Seed: 2, Processors: 3, Processes: 8, Mailboxes: 8, Sends: 40, Fanout: 2},
	{Seed: 3, Processors: 4, Processes: 16, Mailboxes: 16, Sends: 160, Fanout: 2},
}

// resumedCounts derives from the ground truth the packets the optimised
// ResumedbyP1 must receive: every send of P1, and every wait on a mailbox
// whose end comes after P1's first send to it (α enables the mailbox from
// that send on, and a wait's end is delivered when its last chronon is
// enabled; a wait still open at the end is reported then if its mailbox is
// enabled).
func resumedCounts(h *algebra.History) (p1Sends, waits int) {
	first := map[string]algebra.Time{}
	for _, s := range h.Table("SendMessage").Rows {
		if s.Vals[0].S != "P1" {
			continue
		}
		p1Sends++
		if t, ok := first[s.Vals[1].S]; !ok || s.From < t {
			first[s.Vals[1].S] = s.From
		}
	}
	for _, w := range h.Table("Waiting").Rows {
		if s, ok := first[w.Vals[1].S]; ok && s < w.To {
			waits++
		}
	}
	return p1Sends, waits
}

func TestResumedbyP1Packets(t *testing.T) {
	cat := testkit.PaperCatalog(t)
	for _, cfg := range paperSizes {
		t.Run(fmt.Sprintf("P%d-K%d", cfg.Processes, cfg.Sends), func(t *testing.T) {
			h, err := histgen.Paper(cat, cfg)
			if err != nil {
				t.Fatal(err)
			}
			stmts := testkit.Compile(t, cat, "q", resumedByP1, 0)
			want, err := ref.Eval(h, stmts)
			if err != nil {
				t.Fatal(err)
			}
			naive, _ := plans(t, cat, stmts, false)
			opt, _ := plans(t, cat, stmts, true)
			gotN, statsN := acquire(t, cat, h, stmts, naive, 0)
			gotO, statsO := acquire(t, cat, h, stmts, opt, 0)
			for name, got := range map[string]*algebra.Table{"naive": gotN[0], "optimised": gotO[0]} {
				if testkit.Rows(got) != testkit.Rows(want[0]) {
					t.Fatalf("%s result differs from the reference", name)
				}
			}
			if len(want[0].Rows) == 0 {
				t.Fatal("ResumedbyP1 is empty: the workload exercises nothing")
			}
			sends, waits := len(h.Table("SendMessage").Rows), len(h.Table("Waiting").Rows)
			if statsN.Packets["SendMessage"] != sends || statsN.Packets["Waiting"] != waits {
				t.Errorf("naive: %v packets, want every send (%d) and every wait (%d)", statsN.Packets, sends, waits)
			}
			p1, p1Waits := resumedCounts(h)
			if statsO.Packets["SendMessage"] != p1 || statsO.Packets["Waiting"] != p1Waits {
				t.Errorf("optimised: %v packets, want P1's sends (%d) and the unblocks on mailboxes P1 sent to (%d)", statsO.Packets, p1, p1Waits)
			}
			t.Logf("naive %d packets, optimised %d (P1 sent %d; %d unblocks after P1's sends); ratio %.1f",
				statsN.Total, statsO.Total, p1, p1Waits, float64(statsN.Total)/float64(statsO.Total))
		})
	}
}

// samples counts RunningOn tuples valid at each tick of Clock[n] inside the
// history's extent: the packets a sampled RunningOn delivers.
func samples(h *algebra.History, n int64) int {
	start, end, _ := h.Extent()
	count := 0
	for _, c := range algebra.ClockTicks(n, h.Catalog.ClockPeriod, start, end) {
		for _, r := range h.Table("RunningOn").Rows {
			if r.From <= c && c < r.To {
				count++
			}
		}
	}
	return count
}

func TestRunningOnEvery10SecondsPackets(t *testing.T) {
	cat := testkit.PaperCatalog(t)
	h, err := histgen.Paper(cat, paperSizes[1])
	if err != nil {
		t.Fatal(err)
	}
	stmts := testkit.Compile(t, cat, "q", runningOnEvery10Seconds, 0)
	want, err := ref.Eval(h, stmts)
	if err != nil {
		t.Fatal(err)
	}
	naive, _ := plans(t, cat, stmts, false)
	opt, _ := plans(t, cat, stmts, true)
	gotN, statsN := acquire(t, cat, h, stmts, naive, 0)
	gotO, statsO := acquire(t, cat, h, stmts, opt, 0)
	if testkit.Rows(gotN[0]) != testkit.Rows(want[0]) || testkit.Rows(gotO[0]) != testkit.Rows(want[0]) {
		t.Fatal("results differ from the reference")
	}
	if got, want := statsN.Packets["RunningOn"], samples(h, 1); got != want {
		t.Errorf("naive sampled RunningOn %d times, want every second: %d", got, want)
	}
	if got, want := statsO.Packets["RunningOn"], samples(h, 10); got != want {
		t.Errorf("optimised sampled RunningOn %d times, want every 10 ticks: %d", got, want)
	}
	t.Logf("RunningOn packets: naive %d, optimised %d", statsN.Packets["RunningOn"], statsO.Packets["RunningOn"])
}

// TestPaperQueriesBoundedState: the optimised paper queries hold no more
// tuples on histories 10× and 100× longer than the base one than on one
// 3× longer (which reaches the state's steady size: the sampled query's
// tuples per processor fill up in the first stretch).
func TestPaperQueriesBoundedState(t *testing.T) {
	cat := testkit.PaperCatalog(t)
	base := histgen.PaperConfig{Seed: 7, Processors: 3, Processes: 8, Mailboxes: 6, Sends: 50}
	lengths := []int{1, 3, 10, 100}
	for _, q := range []struct{ name, text string }{{"ResumedbyP1", resumedByP1}, {"RunningOnEvery10Seconds", runningOnEvery10Seconds}} {
		var peaks []int
		for _, k := range lengths {
			cfg := base
			cfg.Sends *= k
			h, err := histgen.Paper(cat, cfg)
			if err != nil {
				t.Fatal(err)
			}
			stmts := testkit.Compile(t, cat, "q", q.text, 0)
			opt, _ := plans(t, cat, stmts, true)
			_, stats := acquire(t, cat, h, stmts, opt, 0)
			peaks = append(peaks, stats.PeakHeld)
		}
		if peaks[2] > peaks[1] || peaks[3] > peaks[1] {
			t.Errorf("%s: peak state grows with history length: %v tuples over %v× the base history", q.name, peaks, lengths)
		}
		t.Logf("%s peak held: %v over %v× the base history", q.name, peaks, lengths)
	}
}

// BenchmarkResumedbyP1Packets reports, at three sizes of the paper's system
// (growing processes and sends per process), the packets the naive and the
// optimised ResumedbyP1 receive when run acquisitionally, their ratio and
// P1's sends: the optimised count follows P1's sends, the naive one the
// whole system's traffic.
func BenchmarkResumedbyP1Packets(b *testing.B) {
	cat := testkit.PaperCatalog(b)
	for _, cfg := range paperSizes {
		b.Run(fmt.Sprintf("P%d-K%d", cfg.Processes, cfg.Sends), func(b *testing.B) {
			h, err := histgen.Paper(cat, cfg)
			if err != nil {
				b.Fatal(err)
			}
			stmts := testkit.Compile(b, cat, "q", resumedByP1, 0)
			naive, _ := plans(b, cat, stmts, false)
			opt, _ := plans(b, cat, stmts, true)
			var sn, so exec.AcquireStats
			for i := 0; i < b.N; i++ {
				_, sn = acquire(b, cat, h, stmts, naive, 0)
				_, so = acquire(b, cat, h, stmts, opt, 0)
			}
			p1, _ := resumedCounts(h)
			b.ReportMetric(float64(sn.Total), "naive-packets")
			b.ReportMetric(float64(so.Total), "optimised-packets")
			b.ReportMetric(float64(sn.Total)/float64(so.Total), "ratio")
			b.ReportMetric(float64(p1), "P1-sends")
		})
	}
}
