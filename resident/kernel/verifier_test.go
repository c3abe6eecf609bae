package kernel

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/tqmon/tqmon/resident/kernel/internal/testlock"
	"github.com/tqmon/tqmon/resident/wire"
)

// skewed is the running kernel with task_struct's tgid moved past the
// structure's end: programs reading it are ones the verifier rejects.
type skewed struct{ system }

func (k *skewed) TracepointArgs(event string) ([]btf.Type, error) {
	args, err := k.system.TracepointArgs(event)
	if err != nil || event != "sched_switch" {
		return args, err
	}
	task := btf.Copy(args[2].(*btf.Pointer).Target).(*btf.Struct)
	for i := range task.Members {
		if task.Members[i].Name == "tgid" {
			task.Members[i].Offset = btf.Bits(8 * (task.Size + 64))
		}
	}
	args = append([]btf.Type(nil), args...)
	args[1], args[2] = &btf.Pointer{Target: task}, &btf.Pointer{Target: task}
	return args, nil
}

// A program the kernel's verifier rejects is reported at the place in the
// spec of the instruction the verifier stopped at.
func TestVerifierErrorPlace(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	testlock.Hold(t)
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d, err := describe(nil, &skewed{})
	if err != nil {
		t.Fatal(err)
	}
	r.spec = d.Spec
	for _, s := range d.Spec.Sensors {
		r.sensors[s.ID] = &sensorState{s: s, ids: map[uint32]int{}}
	}
	s := r.Open()
	defer s.Close()
	h := r.Hello()
	var id uint16
	for i, n := range h.Sensors {
		if n == "RunningOn" {
			id = uint16(i)
		}
	}
	err = s.Apply(&wire.Command{Kind: wire.CEnable, Sensor: id, Entity: "1"})
	want := "linux.sdl:75:70: the kernel's verifier rejected tqm_RunningOn_0 (enable test: Process = arg2.tgid)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %s…", err, want)
	}
	t.Log(err)
	if got := r.Attached(); len(got) != 0 {
		t.Errorf("attached after the rejection: %v", got)
	}
}
