package kernel

import (
	"slices"
	"strconv"

	"github.com/cilium/ebpf"
)

// Flags reports what the kernel's enable maps hold: sensor name → sorted
// entity IDs whose counter is positive, plus "*" for a whole-type enable.
// It reads the maps themselves, not the resident's books.
func (r *Resident) Flags() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for _, ss := range r.sensors {
		if ss == nil || ss.att == nil {
			continue
		}
		var id uint32
		var n uint64
		it := ss.att.enable.Iterate()
		for it.Next(&id, &n) {
			if n > 0 {
				out[ss.s.Rel.Name] = append(out[ss.s.Rel.Name], strconv.FormatUint(uint64(id), 10))
			}
		}
		if r.tr != nil && r.tr.flags[ss.s.ID].All > 0 {
			out[ss.s.Rel.Name] = append(out[ss.s.Rel.Name], "*")
		}
		slices.Sort(out[ss.s.Rel.Name])
	}
	return out
}

// Attached lists the sensors whose programs are attached.
func (r *Resident) Attached() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ss := range r.sensors {
		if ss != nil && ss.att != nil {
			out = append(out, ss.s.Rel.Name)
		}
	}
	return out
}

// SensorStats counts one sensor's packets since tracking started.
type SensorStats struct {
	// Wanted and Dropped are the kernel's counts: packets the sensor's
	// programs wanted to write, and those the ring had no room for.
	Wanted, Dropped uint64
	// Delivered counts the packets read from the ring.
	Delivered uint64
	// Overflowed: more processes were selected by their command than
	// the kernel's map holds, and the sensor fires for every process
	// instead (bpfgen.MapEntSelOver; exact, more packets).
	Overflowed bool
}

// Stats returns, per sensor name, the counts of the current tracking
// (empty when no session is open). Delivered + Dropped = Wanted once the
// rings are drained.
func (r *Resident) Stats() map[string]SensorStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]SensorStats{}
	t := r.tr
	if t == nil {
		return out
	}
	for _, c := range t.counts() {
		name := r.cat.Relations[c.Sensor].Name
		out[name] = SensorStats{Wanted: c.Wanted, Dropped: c.Drops, Delivered: t.delivered[c.Sensor].Load(), Overflowed: t.overflowed(int(c.Sensor))}
	}
	return out
}

// OurPrograms lists the eBPF programs loaded in the kernel whose names
// carry our prefix ("tqm_"), by ID — whoever loaded them: the kernel's
// own listing, for checking that nothing of ours is left behind.
func OurPrograms() ([]string, error) {
	var out []string
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			break
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue // gone meanwhile
		}
		info, err := p.Info()
		p.Close()
		if err == nil && len(info.Name) >= 4 && info.Name[:4] == "tqm_" {
			out = append(out, info.Name)
		}
	}
	return out, nil
}

// Anomalies reports records that arrived stamped before a watermark
// already sent (their time was moved after it) and records that did not
// decode, since tracking started.
func (r *Resident) Anomalies() (late, bad uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tr == nil {
		return 0, 0
	}
	return r.tr.late, r.tr.bad
}
