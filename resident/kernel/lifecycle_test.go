package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
)

// ours lists our programs in the kernel (its own listing, by name).
func ours(t *testing.T) []string {
	t.Helper()
	progs, err := kernel.OurPrograms()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(progs)
	return progs
}

// waitPrograms waits until the kernel's listing of our programs is want.
func waitPrograms(t *testing.T, what string, want ...string) {
	t.Helper()
	slices.Sort(want)
	kerneltest.WaitPrograms(t, what+fmt.Sprintf(" (want %v)", want), func(got []string) bool {
		slices.Sort(got)
		return slices.Equal(got, want)
	})
}

func sensorID(t *testing.T, h *wire.Hello, name string) uint16 {
	t.Helper()
	i := slices.Index(h.Sensors, name)
	if i < 0 {
		t.Fatalf("no sensor %s", name)
	}
	return uint16(i)
}

var entityPrograms = []string{"tqm_exec", "tqm_exit", "tqm_fork"}

// With no session nothing of ours is in the kernel; a session brings the
// entity programs; a sensor's programs come with its first enable and go
// with its last; the session's end takes everything away — as the
// kernel's own program listing shows.
func TestAttachOnDemand(t *testing.T) {
	kerneltest.Need(t)
	waitPrograms(t, "before")
	res, err := kernel.New(kernel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	waitPrograms(t, "a resident without sessions")
	s := res.Open()
	waitPrograms(t, "a session", entityPrograms...)
	h := res.Hello()
	self := strconv.Itoa(os.Getpid())
	enable := &wire.Command{Kind: wire.CEnable, Sensor: sensorID(t, h, "SyscallCall"), Entity: self}
	if err := s.Apply(enable); err != nil {
		t.Fatal(err)
	}
	waitPrograms(t, "SyscallCall enabled", append([]string{"tqm_SyscallCa_0", "tqm_SyscallC_0e", "tqm_tSyscallC_0", "tqm_tSyscall_0e"}, entityPrograms...)...)
	if got := res.Flags(); !slices.Equal(got["SyscallCall"], []string{self}) || len(got) != 1 {
		t.Errorf("enable maps: %v", got)
	}
	// Twice enabled, once disabled: still attached.
	if err := s.Apply(enable); err != nil {
		t.Fatal(err)
	}
	disable := *enable
	disable.Kind = wire.CDisable
	if err := s.Apply(&disable); err != nil {
		t.Fatal(err)
	}
	if got := res.Attached(); !slices.Equal(got, []string{"SyscallCall"}) {
		t.Errorf("attached: %v", got)
	}
	if err := s.Apply(&disable); err != nil {
		t.Fatal(err)
	}
	waitPrograms(t, "SyscallCall disabled", entityPrograms...)
	if err := s.Apply(&wire.Command{Kind: wire.CEnableAll, Sensor: sensorID(t, h, "Wakeup")}); err != nil {
		t.Fatal(err)
	}
	if got := res.Flags(); !slices.Equal(got["Wakeup"], []string{"*"}) {
		t.Errorf("enable maps: %v", got)
	}
	s.Close()
	waitPrograms(t, "the session closed")
	if got := res.Attached(); len(got) != 0 {
		t.Errorf("attached after the session: %v", got)
	}
	// A new session starts over.
	s2 := res.Open()
	if err := s2.Apply(enable); err != nil {
		t.Fatal(err)
	}
	waitPrograms(t, "a second session", append([]string{"tqm_SyscallCa_0", "tqm_SyscallC_0e", "tqm_tSyscallC_0", "tqm_tSyscall_0e"}, entityPrograms...)...)
	res.Close()
	waitPrograms(t, "the resident closed")
	if _, err := s2.Recv(context.Background()); err != nil && !errors.Is(err, session.ErrClosed) {
		t.Errorf("Recv after Close: %v", err)
	}
}

// A session whose remote stops renewing its lease ends, and everything it
// enabled is detached.
func TestLeaseExpiry(t *testing.T) {
	kerneltest.Need(t)
	res, err := kernel.New(kernel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	s := res.Open()
	h := res.Hello()
	start := time.Now()
	for _, c := range []*wire.Command{
		{Kind: wire.CLease, Period: int64(200 * time.Millisecond)},
		{Kind: wire.CEnableAll, Sensor: sensorID(t, h, "Syscall")},
	} {
		if err := s.Apply(c); err != nil {
			t.Fatal(err)
		}
	}
	for {
		_, err := s.Recv(context.Background())
		if errors.Is(err, session.ErrLeaseExpired) {
			break
		}
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("the lease did not expire")
		}
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("the lease expired after %v", d)
	}
	waitPrograms(t, "the lease expired")
}

// Commands the kernel resident cannot carry out change nothing and say
// why.
func TestCommandErrors(t *testing.T) {
	kerneltest.Need(t)
	res, err := kernel.New(kernel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	s := res.Open()
	h := res.Hello()
	sys := sensorID(t, h, "Syscall")
	tests := []struct {
		cmd  wire.Command
		want string
	}{
		{wire.Command{Kind: wire.CEnable, Sensor: 99, Entity: "1"}, "command 1 (enable): sensor: unknown sensor 99"},
		{wire.Command{Kind: wire.CEnable, Sensor: sensorID(t, h, "Process"), Entity: "1"}, "Process has no kernel sensor"},
		{wire.Command{Kind: wire.CEnable, Sensor: sys, Type: 1, Entity: "1"}, "type: Syscall's flag holder is a Process"},
		{wire.Command{Kind: wire.CEnable, Sensor: sys, Entity: "P1"}, `entity: Process IDs are numbers, not "P1"`},
		{wire.Command{Kind: wire.CDisable, Sensor: sys, Entity: "1"}, "Syscall is not enabled for Process 1 by this session"},
		{wire.Command{Kind: wire.CDisableAll, Sensor: sys}, "Syscall is not enabled for every entity"},
		{wire.Command{Kind: wire.CTrigger, Sensor: sys, On: sys}, `does not evaluate triggers on sensed relations (it does not advertise "triggers")`},
		{wire.Command{Kind: wire.CSample, Sensor: sys}, "no sampled sensors"},
		{wire.Command{Kind: wire.CLease}, "lease period 0 ns is not positive"},
	}
	for _, tt := range tests {
		err := s.Apply(&tt.cmd)
		var ce *session.CommandError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want a CommandError with %q", tt.cmd.Kind, err, tt.want)
		}
	}
	if got := res.Attached(); len(got) != 0 {
		t.Errorf("refused commands attached %v", got)
	}
	if h.Has(wire.CapTriggers) {
		t.Error("the kernel resident advertises triggers")
	}
}
