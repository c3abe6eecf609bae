package histgen

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/tqmon/tqmon/algebra"
)

// PaperConfig shapes a history of the paper's subject system (section 4):
// processors run processes; each process runs, sends a message to a
// mailbox, then receives from its own mailbox, blocking while it is empty.
type PaperConfig struct {
	Seed       uint64
	Processors int // A, B, C, …
	Processes  int // P1, P2, …
	Mailboxes  int // M1, M2, …; process Pi receives on M((i−1) mod Mailboxes + 1)
	Sends      int // messages each process sends before it is done
	// Fanout, when positive, makes process Pi send only to the Fanout
	// mailboxes after its own (a ring when 1); 0 sends anywhere.
	Fanout int
}

// Paper simulates the system and records its history over the catalog of
// the paper's os.sdl (Processor, Process with State, Mailbox, SendMessage,
// RunningOn, Waiting). Times are whole seconds. A process does not block
// when no other process could ever wake it (none ready or running): it goes
// on as if its receive had timed out, so the system never deadlocks; a
// process still blocked when the others are done stays Waiting until the
// end (an open interval).
func Paper(cat *algebra.Catalog, cfg PaperConfig) (*algebra.History, error) {
	for _, name := range []string{"Processor", "Process", "Mailbox", "SendMessage", "RunningOn", "Waiting"} {
		if cat.Lookup(name) == nil {
			return nil, fmt.Errorf("catalog has no relation %s (want the paper's os.sdl)", name)
		}
	}
	state := cat.Lookup("Process").Attrs[1].Type.Enum
	st := func(name string) algebra.Value {
		v, _ := state.Value(name)
		return v
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	h := algebra.NewHistory(cat)
	const sec = algebra.Time(1e9)

	cpuName := func(i int) string {
		if i < 26 {
			return string(rune('A' + i))
		}
		return fmt.Sprintf("CPU%d", i+1)
	}
	proc := func(i int) algebra.Value { return algebra.Entity(fmt.Sprintf("P%d", i+1)) }
	mbox := func(i int) algebra.Value { return algebra.Entity(fmt.Sprintf("M%d", i+1)) }
	home := func(p int) int { return p % cfg.Mailboxes }

	type process struct {
		state      string
		since      algebra.Time
		sent       int
		waitingOn  int
		waitSince  algebra.Time
		runSince   algebra.Time
		cpu        int
		readySince algebra.Time
	}
	procs := make([]*process, cfg.Processes)
	for i := range procs {
		procs[i] = &process{state: "Ready", cpu: -1}
	}
	setState := func(p int, s string, at algebra.Time) {
		pr := procs[p]
		if pr.state == s {
			return
		}
		if at > pr.since {
			h.Table("Process").Add([]algebra.Value{proc(p), st(pr.state)}, pr.since, at)
		}
		pr.state, pr.since = s, at
	}
	pending := make([]int, cfg.Mailboxes) // messages waiting in each mailbox
	blocked := make([][]int, cfg.Mailboxes)
	cpus := make([]int, cfg.Processors) // process running on each, or -1
	for i := range cpus {
		cpus[i] = -1
	}
	var ready []int
	for i := range procs {
		ready = append(ready, i)
	}

	// Discrete events: a running process finishes its burst at a time.
	type burst struct {
		at  algebra.Time
		cpu int
	}
	var bursts []burst
	now := algebra.Time(0)
	dispatch := func() {
		for c := range cpus {
			if cpus[c] >= 0 || len(ready) == 0 {
				continue
			}
			p := ready[0]
			ready = ready[1:]
			cpus[c] = p
			procs[p].cpu, procs[p].runSince = c, now
			setState(p, "Running", now)
			bursts = append(bursts, burst{at: now + sec*algebra.Time(1+r.IntN(5)), cpu: c})
		}
	}
	dispatch()
	for len(bursts) > 0 {
		sort.Slice(bursts, func(i, j int) bool {
			if bursts[i].at != bursts[j].at {
				return bursts[i].at < bursts[j].at
			}
			return bursts[i].cpu < bursts[j].cpu
		})
		b := bursts[0]
		bursts = bursts[1:]
		now = b.at
		p := cpus[b.cpu]
		pr := procs[p]
		h.Table("RunningOn").Add([]algebra.Value{proc(p), algebra.Entity(cpuName(b.cpu))}, pr.runSince, now)
		cpus[b.cpu], pr.cpu = -1, -1
		// The burst ends with a send.
		to := r.IntN(cfg.Mailboxes)
		if cfg.Fanout > 0 {
			to = (home(p) + 1 + r.IntN(cfg.Fanout)) % cfg.Mailboxes
		}
		h.Table("SendMessage").AddEvent([]algebra.Value{proc(p), mbox(to)}, now)
		pr.sent++
		if q := blocked[to]; len(q) > 0 {
			// The message resumes the first process blocked on it.
			w := q[0]
			blocked[to] = q[1:]
			wp := procs[w]
			if wp.waitSince < now { // resumed at the instant it blocked: it never waited
				h.Table("Waiting").Add([]algebra.Value{proc(w), mbox(to)}, wp.waitSince, now)
			}
			setState(w, "Ready", now)
			ready = append(ready, w)
		} else {
			pending[to]++
		}
		switch {
		case pr.sent >= cfg.Sends:
			setState(p, "Done", now)
		case pending[home(p)] > 0:
			pending[home(p)]--
			setState(p, "Ready", now)
			ready = append(ready, p)
		case len(ready) == 0 && !anyRunning(cpus):
			setState(p, "Ready", now) // nobody could wake it: do not block
			ready = append(ready, p)
		default:
			pr.waitSince, pr.waitingOn = now, home(p)
			blocked[home(p)] = append(blocked[home(p)], p)
			setState(p, "Waiting", now)
		}
		dispatch()
	}
	for i, pr := range procs {
		h.Table("Process").Add([]algebra.Value{proc(i), st(pr.state)}, pr.since, algebra.Forever)
		if pr.state == "Waiting" {
			h.Table("Waiting").Add([]algebra.Value{proc(i), mbox(pr.waitingOn)}, pr.waitSince, algebra.Forever)
		}
	}
	for c := 0; c < cfg.Processors; c++ {
		h.Table("Processor").Add([]algebra.Value{algebra.Entity(cpuName(c))}, 0, algebra.Forever)
	}
	for m := 0; m < cfg.Mailboxes; m++ {
		h.Table("Mailbox").Add([]algebra.Value{mbox(m)}, 0, algebra.Forever)
	}
	for _, t := range h.Tables {
		t.SortRows()
		if err := t.Validate(); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func anyRunning(cpus []int) bool {
	for _, p := range cpus {
		if p >= 0 {
			return true
		}
	}
	return false
}
