package bpfgen

import (
	"fmt"
	"slices"
	"strings"
)

// Listing renders the spec deterministically: per sensor its bindings'
// modes and record layouts, its maps, and every program's attach point
// and instructions (with the spec places they come from); then the entity
// programs.
func (s *Spec) Listing() string {
	var b strings.Builder
	for _, x := range s.Sensors {
		fmt.Fprintf(&b, "sensor %s (relation %d, flag %s: %s", x.Rel.Name, x.ID, x.Rel.Attrs[x.Flag].Name, x.FlagType)
		if x.Decrement {
			b.WriteString(", decremented")
		}
		b.WriteString(")\n")
		names := make([]string, 0, len(x.Maps))
		for n := range x.Maps {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			m := x.Maps[n]
			fmt.Fprintf(&b, "  map %s: %s %s key %d value %d entries %d\n", n, m.Name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries)
		}
		for _, bd := range x.Bindings {
			fmt.Fprintf(&b, "  binding %d (%s:%s): %s, %d bytes:", bd.Index, bd.File, bd.Pos, bd.Mode, bd.Layout.Size)
			for _, sl := range bd.Layout.Slots {
				fmt.Fprintf(&b, " %s@%d", x.Rel.Attrs[sl.Attr].Name, sl.Off)
				switch {
				case sl.Str:
					fmt.Fprintf(&b, "[%d]", sl.Size)
				case sl.Entity != "":
					fmt.Fprintf(&b, "(%s)", sl.Entity)
				case sl.Decode == DecodeSyscall:
					b.WriteString("(syscall)")
				case sl.Decode == DecodeTaskState:
					b.WriteString("(task_state)")
				}
			}
			b.WriteString("\n")
			for _, p := range bd.Programs {
				writeProgram(&b, p)
			}
		}
	}
	for _, p := range s.Entities {
		writeProgram(&b, p)
	}
	return b.String()
}

func writeProgram(b *strings.Builder, p *Program) {
	fmt.Fprintf(b, "  program %s at %s\n", p.Name, p.Attach)
	fmt.Fprintf(b, "%.2v", p.Spec.Instructions)
}

func (a Attach) String() string {
	switch a.Kind {
	case AttachTracepoint:
		return "tracepoint " + a.Group + ":" + a.Event
	case AttachUretprobe:
		return fmt.Sprintf("uretprobe %s %s", a.Path, a.Symbol)
	case AttachUprobe:
		offs := make([]string, len(a.Offsets))
		for i, o := range a.Offsets {
			offs[i] = fmt.Sprintf("+%#x", o)
		}
		return fmt.Sprintf("uprobe %s %s%s", a.Path, a.Symbol, strings.Join(offs, ","))
	}
	return "?"
}
