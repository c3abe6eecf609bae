package bpfgen

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/resident/wire"
)

// A few system call numbers, as the kernel resident's table has them.
var testSyscalls = map[string]uint64{"read": 0, "open": 2, "getpid": 39, "getppid": 110, "getpgrp": 111, "openat": 257}

func str(op wire.PredOp, attr int, s string) wire.Pred {
	return wire.Pred{Op: op, Attr: uint16(attr), Value: wire.Value{Kind: wire.VString, S: s}}
}

func ent(attr int, id string) wire.Pred {
	return wire.Pred{Op: wire.PEq, Attr: uint16(attr), Value: wire.Value{Kind: wire.VEntity, S: id}}
}

func num(op wire.PredOp, attr int, n int64) wire.Pred {
	return wire.Pred{Op: op, Attr: uint16(attr), Value: wire.Value{Kind: wire.VInt, N: uint64(n)}}
}

func and(ps ...wire.Pred) wire.Pred { return wire.Pred{Op: wire.PAnd, Kids: ps} }
func or(ps ...wire.Pred) wire.Pred  { return wire.Pred{Op: wire.POr, Kids: ps} }
func pnot(p wire.Pred) wire.Pred    { return wire.Pred{Op: wire.PNot, Kids: []wire.Pred{p}} }

// What a program evaluates of a selection: exactly the comparisons it can
// evaluate as the algebra does, the others weakened (true where they
// occur positively, false under a not), so that its test is implied by
// the selection; constants folded; per binding.
func TestFilterPlaced(t *testing.T) {
	spec, err := compileFiles(t, [2]string{"linux.sdl", linuxSDL(t)}, [2]string{"uprobes.sdl", uprobeSDL})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", UserStringSize) // longer than the record's buffer holds
	var many []wire.Pred
	for i := range MaxFilterCmps + 1 {
		many = append(many, num(wire.PEq, 3, int64(i)))
	}
	// Syscall(Process, Thread, Name); SyscallCall(Process, Thread, Name,
	// Result); FileOpen(Process, Thread, Path, Flags) with three bindings
	// (openat, open, creat: Flags = 577); WorkResult(Process, Command, R).
	for _, c := range []struct {
		rel  string
		pred wire.Pred
		want []string
	}{
		{"Syscall", str(wire.PEq, 2, "getppid"), []string{`Name = "getppid" (system call 110)`}},
		{"Syscall", str(wire.PNe, 2, "read"), []string{`not (Name = "read" (system call 0))`}},
		{"Syscall", pnot(str(wire.PEq, 2, "read")), []string{`not (Name = "read" (system call 0))`}},
		{"Syscall", or(str(wire.PEq, 2, "getppid"), or(str(wire.PEq, 2, "open"), str(wire.PEq, 2, "openat"))),
			[]string{`Name = "getppid" (system call 110) or Name = "open" (system call 2) or Name = "openat" (system call 257)`}},
		{"Syscall", str(wire.PPrefix, 2, "getp"), []string{`Name prefix "getp" (system calls 39, 110, 111)`}},
		{"Syscall", pnot(str(wire.PPrefix, 2, "getp")), []string{`not (Name prefix "getp" (system calls 39, 110, 111))`}},
		{"Syscall", or(str(wire.PPrefix, 2, "getp"), str(wire.PEq, 2, "read")), []string{`(Name prefix "getp" (system calls 39, 110, 111)) or Name = "read" (system call 0)`}},
		{"Syscall", str(wire.PPrefix, 2, "sys"), []string{""}},           // also names syscall_N
		{"Syscall", str(wire.PEq, 2, "nosuch"), []string{"false"}},       // no number has the name
		{"Syscall", str(wire.PEq, 2, "syscall_110"), []string{"false"}},  // 110 is getppid
		{"Syscall", str(wire.PEq, 2, "syscall_0999"), []string{"false"}}, // not how the drain writes 999
		{"Syscall", str(wire.PEq, 2, "syscall_999"), []string{`Name = "syscall_999" (system call 999)`}},
		{"Syscall", str(wire.PLt, 2, "m"), []string{""}},       // ordering of names: the monitor's
		{"Syscall", pnot(str(wire.PLt, 2, "m")), []string{""}}, // under a not too
		{"Syscall", and(str(wire.PEq, 2, "read"), str(wire.PLt, 2, "m")), []string{`Name = "read" (system call 0)`}},
		{"Syscall", or(ent(0, "1"), str(wire.PLt, 2, "m")), []string{""}},
		{"Syscall", and(ent(0, "12"), pnot(ent(1, "13"))), []string{`Process = 12 and not (Thread = 13)`}},
		{"Syscall", ent(0, "012"), []string{"false"}}, // no entity number is written so
		{"Syscall", ent(0, "x"), []string{"false"}},
		{"SyscallCall", num(wire.PGt, 3, 0), []string{""}}, // Result: filled at the end
		{"SyscallCall", and(num(wire.PGt, 3, 0), str(wire.PEq, 2, "read")), []string{`Name = "read" (system call 0)`}},
		{"FileOpen", str(wire.PEq, 2, "/etc/hostname"), []string{`Path = "/etc/hostname"`, `Path = "/etc/hostname"`, `Path = "/etc/hostname"`}},
		{"FileOpen", str(wire.PEq, 2, ""), []string{"", "", ""}}, // a failed read reads as "" too
		{"FileOpen", str(wire.PEq, 2, long), []string{"false", "false", "false"}},
		{"FileOpen", str(wire.PEq, 2, "a\x00b"), []string{"false", "false", "false"}},
		{"FileOpen", str(wire.PPrefix, 2, ""), []string{"", "", ""}},
		{"FileOpen", and(str(wire.PPrefix, 2, "/etc/"), num(wire.PGe, 3, -1)), []string{`Path prefix "/etc/" and Flags >= -1`, `Path prefix "/etc/" and Flags >= -1`, `Path prefix "/etc/" and Flags >= -1`}},
		{"FileOpen", or(many...), []string{"", "", ""}}, // more than MaxFilterCmps
		{"OffCPU", wire.Pred{Op: wire.PEq, Attr: 2, Value: wire.Value{Kind: wire.VEnum, N: 1}}, []string{""}},
		{"WorkResult", str(wire.PEq, 1, "cat"), []string{`Command = "cat"`}},
		{"WorkResult", str(wire.PEq, 1, "a-name-longer-than-15"), []string{"false"}},
	} {
		var s *Sensor
		for _, x := range spec.Sensors {
			if x.Rel.Name == c.rel {
				s = x
			}
		}
		f := s.Filter(&c.pred, testSyscalls, false)
		if !slices.Equal(f.Placed, c.want) {
			t.Errorf("%s %s:\n got %q\nwant %q", c.rel, c.pred.Key(nil), f.Placed, c.want)
		}
		if len(f.Programs) != len(s.Programs()) {
			t.Errorf("%s: %d programs, want %d", c.rel, len(f.Programs), len(s.Programs()))
		}
		for _, p := range f.Programs {
			var buf bytes.Buffer
			if err := p.Spec.Instructions.Marshal(&buf, binary.LittleEndian); err != nil {
				t.Errorf("%s %s: %s does not assemble: %v", c.rel, c.pred.Key(nil), p.Name, err)
			}
		}
	}
}

// A string constant is held in the filter's constants map, word-aligned
// and NUL-padded; a command name compared whole is padded to its buffer.
func TestFilterConsts(t *testing.T) {
	spec, err := compileFiles(t, [2]string{"linux.sdl", linuxSDL(t)}, [2]string{"uprobes.sdl", uprobeSDL})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rel  string
		pred wire.Pred
		want string
	}{
		{"FileOpen", str(wire.PEq, 2, "/etc/hostname"), "/etc/hostname\x00\x00\x00"},
		{"FileOpen", or(str(wire.PEq, 2, "/a"), str(wire.PPrefix, 2, "/etc/")), "/a\x00\x00\x00\x00\x00\x00/etc/\x00\x00\x00"},
		{"WorkResult", str(wire.PEq, 1, "cat"), "cat" + strings.Repeat("\x00", 13)},
		{"Syscall", str(wire.PEq, 2, "read"), ""},
	} {
		var s *Sensor
		for _, x := range spec.Sensors {
			if x.Rel.Name == c.rel {
				s = x
			}
		}
		f := s.Filter(&c.pred, testSyscalls, false)
		got := ""
		if f.Consts != nil {
			got = string(f.Consts.Contents[0].Value.([]byte))
			if int(f.Consts.ValueSize) != len(got) {
				t.Errorf("%s: value size %d, contents %d bytes", c.rel, f.Consts.ValueSize, len(got))
			}
		}
		// (FileOpen's three bindings share one map: each adds its own
		// copy of the constants; the first binding's come first.)
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %s: constants %q, want %q first", c.rel, c.pred.Key(nil), got, c.want)
		}
	}
}
