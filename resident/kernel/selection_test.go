package kernel

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/resident/kernel/internal/testlock"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor/bpfgen"
)

func sensorID(t *testing.T, r *Resident, name string) uint16 {
	t.Helper()
	i := slices.Index(r.Hello().Sensors, name)
	if i < 0 {
		t.Fatalf("no sensor %s", name)
	}
	return uint16(i)
}

func nameIs(s string) *wire.Pred {
	return &wire.Pred{Op: wire.PEq, Attr: 2, Value: wire.Value{Kind: wire.VString, S: s}}
}

// The selection in a sensor's programs is the or of what the sessions
// that enable the sensor select, each distinct predicate once; a session
// that enables the sensor without a fragment on it (or with one without
// a predicate) makes it select nothing; a session that does not enable
// the sensor does not count. It follows the sessions' fragments,
// enables and ends, each change replacing the programs — which the
// kernel's verifier accepts for every kind of comparison compiled.
func TestSelectionFollowsSessions(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	testlock.Hold(t)
	var logged []string
	r, err := New(Options{Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sys := sensorID(t, r, "Syscall")
	apply := func(s *Session, cmd wire.Command) {
		t.Helper()
		if err := s.Apply(&cmd); err != nil {
			t.Fatal(err)
		}
	}
	placed := func(want string) {
		t.Helper()
		if got := r.Placed()["Syscall"]; len(got) != 1 || got[0] != want {
			t.Errorf("Syscall selects %q, want %q", got, want)
		}
	}
	a, b, c := r.Open(), r.Open(), r.Open()
	defer a.Close()
	apply(a, wire.Command{Kind: wire.CEnable, Sensor: sys, Entity: "1"})
	placed("")
	apply(a, wire.Command{Kind: wire.CFragment, ID: 1, Sensor: sys, Pred: nameIs("getppid")})
	placed(`Name = "getppid" (system call 110)`)
	// c selects another name but enables nothing: it does not count.
	apply(c, wire.Command{Kind: wire.CFragment, ID: 1, Sensor: sys, Pred: nameIs("read")})
	placed(`Name = "getppid" (system call 110)`)
	// b enables the sensor (another process) without a fragment: all.
	apply(b, wire.Command{Kind: wire.CEnable, Sensor: sys, Entity: "2"})
	placed("")
	// b selects the same name as a: compiled once.
	apply(b, wire.Command{Kind: wire.CFragment, ID: 7, Sensor: sys, Pred: nameIs("getppid")})
	placed(`Name = "getppid" (system call 110)`)
	// c enables the whole type: its name joins.
	apply(c, wire.Command{Kind: wire.CEnableAll, Sensor: sys})
	placed(`Name = "getppid" (system call 110) or Name = "read" (system call 0)`)
	c.Close()
	placed(`Name = "getppid" (system call 110)`)
	// b's fragment without a predicate: all.
	apply(b, wire.Command{Kind: wire.CFragment, ID: 8, Sensor: sys})
	placed("")
	apply(b, wire.Command{Kind: wire.CUnfragment, ID: 8})
	placed(`Name = "getppid" (system call 110)`)
	apply(b, wire.Command{Kind: wire.CDisable, Sensor: sys, Entity: "2"})
	placed(`Name = "getppid" (system call 110)`)
	b.Close()
	// Every kind of comparison, in every sensor: the verifier accepts them.
	str := func(op wire.PredOp, attr int, s string) wire.Pred {
		return wire.Pred{Op: op, Attr: uint16(attr), Value: wire.Value{Kind: wire.VString, S: s}}
	}
	num := func(op wire.PredOp, attr int, n int64) wire.Pred {
		return wire.Pred{Op: op, Attr: uint16(attr), Value: wire.Value{Kind: wire.VInt, N: uint64(n)}}
	}
	ent := func(attr int, id string) wire.Pred {
		return wire.Pred{Op: wire.PNe, Attr: uint16(attr), Value: wire.Value{Kind: wire.VEntity, S: id}}
	}
	long := string(slices.Repeat([]byte("/x"), 120))
	for i, c := range []struct {
		rel  string
		pred wire.Pred
	}{
		{"Syscall", wire.Pred{Op: wire.POr, Kids: []wire.Pred{str(wire.PPrefix, 2, "get"), {Op: wire.PNot, Kids: []wire.Pred{ent(1, "3")}}}}},
		{"SyscallCall", wire.Pred{Op: wire.PAnd, Kids: []wire.Pred{str(wire.PEq, 2, "read"), num(wire.PGt, 3, 0)}}},
		{"FileOpen", wire.Pred{Op: wire.POr, Kids: []wire.Pred{str(wire.PEq, 2, "/etc/hostname"), str(wire.PPrefix, 2, "/proc/"), str(wire.PEq, 2, long), num(wire.PLe, 3, -5)}}},
		{"RunningOn", ent(2, "0")},
		{"Wakeup", ent(0, "1")},
	} {
		id := sensorID(t, r, c.rel)
		apply(a, wire.Command{Kind: wire.CEnableAll, Sensor: id})
		apply(a, wire.Command{Kind: wire.CFragment, ID: uint64(100 + i), Sensor: id, Pred: &c.pred})
		for j, p := range r.Placed()[c.rel] {
			if p == "" {
				t.Errorf("%s binding %d selects nothing of %s", c.rel, j, c.pred.Key(nil))
			}
		}
	}
	if len(logged) > 0 {
		t.Errorf("selections not compiled: %q", logged)
	}
}

// Entity triggers are bounded: 64 per session (maxFragments), and
// bpfgen.CommSelEntries command names over all sessions — one more name
// is refused naming the bound, a name already selected is not one more.
// A session's end takes its triggers back, and the sensor they attached.
func TestEntityTriggerBounds(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	testlock.Hold(t)
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fo, proc := sensorID(t, r, "FileOpen"), sensorID(t, r, "Process")
	trig := func(s *Session, id uint64, name string) error {
		return s.Apply(&wire.Command{Kind: wire.CTrigger, ID: id, Sensor: fo, On: proc, Attr: 0, While: true,
			Conds: []wire.Cond{{Attr: 1, Value: wire.Value{Kind: wire.VString, S: name}}}})
	}
	a, b := r.Open(), r.Open()
	defer b.Close()
	for i := range maxFragments {
		if err := trig(a, uint64(i), fmt.Sprintf("n%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := trig(a, 999, "another"); err == nil || !strings.Contains(err.Error(), "64 triggers") {
		t.Errorf("a 65th trigger in a session: %v", err)
	}
	if err := trig(b, 1, "n64"); err == nil || !strings.Contains(err.Error(), "bpfgen.CommSelEntries") {
		t.Errorf("a 65th command name: %v", err)
	}
	if err := trig(b, 2, "n3"); err != nil {
		t.Errorf("a name already selected: %v", err)
	}
	if got := r.Attached(); !slices.Equal(got, []string{"FileOpen"}) {
		t.Errorf("attached: %v", got)
	}
	a.Close()
	b.Apply(&wire.Command{Kind: wire.CUntrigger, ID: 2})
	if got := r.Attached(); len(got) != 0 || len(r.commSel) != 0 {
		t.Errorf("after the triggers: attached %v, names selected %v", got, r.commSel)
	}
}

// Fragments are bounded and checked: 64 per session (maxFragments; the
// 65th refused naming it), predicates checked against the sensor's
// attributes (wire.Pred.Check: a constant of another kind, an attribute
// the sensor lacks, more than wire.MaxPredNodes nodes — each refused,
// changing nothing), and a selection of more than bpfgen.MaxFilterCmps
// comparisons is not compiled (the programs select nothing; the monitor
// still does).
func TestFragmentBounds(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	testlock.Hold(t)
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sys := sensorID(t, r, "Syscall")
	s := r.Open()
	defer s.Close()
	if err := s.Apply(&wire.Command{Kind: wire.CEnable, Sensor: sys, Entity: "1"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pred *wire.Pred
		want string
	}{
		{&wire.Pred{Op: wire.PEq, Attr: 2, Value: wire.Value{Kind: wire.VInt, N: 1}}, "Syscall.Name is a string, the constant a int"},
		{&wire.Pred{Op: wire.PEq, Attr: 9, Value: wire.Value{Kind: wire.VInt}}, "Syscall has no attribute 9"},
		{&wire.Pred{Op: wire.POr, Kids: slices.Repeat([]wire.Pred{*nameIs("read")}, wire.MaxPredNodes)}, "more than 256 predicate nodes"},
	} {
		err := s.Apply(&wire.Command{Kind: wire.CFragment, ID: 1, Sensor: sys, Pred: c.pred})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.pred.Key(nil)[:min(40, len(c.pred.Key(nil)))], err, c.want)
		}
	}
	var many []wire.Pred
	for i := range bpfgen.MaxFilterCmps + 1 {
		many = append(many, *nameIs(fmt.Sprintf("syscall_%d", 1000+i)))
	}
	if err := s.Apply(&wire.Command{Kind: wire.CFragment, ID: 1, Sensor: sys, Pred: &wire.Pred{Op: wire.POr, Kids: many}}); err != nil {
		t.Fatal(err)
	}
	if got := r.Placed()["Syscall"]; len(got) != 1 || got[0] != "" {
		t.Errorf("a selection of %d comparisons is compiled: %q", len(many), got)
	}
	for i := 2; i <= maxFragments; i++ {
		if err := s.Apply(&wire.Command{Kind: wire.CFragment, ID: uint64(i), Sensor: sys, Pred: nameIs("read")}); err != nil {
			t.Fatal(err)
		}
	}
	err = s.Apply(&wire.Command{Kind: wire.CFragment, ID: 999, Sensor: sys, Pred: nameIs("read")})
	if err == nil || !strings.Contains(err.Error(), "64 fragments") {
		t.Errorf("a 65th fragment: %v", err)
	}
	if err := s.Apply(&wire.Command{Kind: wire.CUnfragment, ID: 1}); err != nil {
		t.Fatal(err)
	}
	if got := r.Placed()["Syscall"]; len(got) != 1 || got[0] != `Name = "read" (system call 0)` {
		t.Errorf("63 equal fragments: %q", got)
	}
}
