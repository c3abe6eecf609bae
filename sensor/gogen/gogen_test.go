package gogen_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/sensor/gogen"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func load(t *testing.T, path string) (*algebra.Catalog, string) {
	t.Helper()
	text := testkit.ReadFile(t, path)
	return testkit.CompileSpec(t, path, text), text
}

// TestGeneratedSensorsCurrent: the demo's committed sensors are what the
// generator makes from its description today (run go generate in
// resident/demo after changing either).
func TestGeneratedSensorsCurrent(t *testing.T) {
	cat, text := load(t, "../../resident/demo/os.sdl")
	got, err := gogen.Generate(cat, text, "ossensors")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../resident/demo/ossensors/ossensors.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("resident/demo/ossensors is stale: run go generate ./resident/demo")
	}
}

// TestGolden checks the code generated for the differential spec (every
// attribute type, every strategy, enums) against a golden file.
func TestGolden(t *testing.T) {
	cat, text := load(t, "../../testdata/differential/spec.sdl")
	got, err := gogen.Generate(cat, text, "diffsensors")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "diffsensors.go.golden")
	if *update {
		os.WriteFile(golden, got, 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("generated code differs from %s (go test ./sensor/gogen -update rewrites it)", golden)
	}
	again, _ := gogen.Generate(cat, text, "diffsensors")
	if !bytes.Equal(got, again) {
		t.Error("generation is not deterministic")
	}
}

func TestNameErrors(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"entity type P\nentity relation P(P: P)\nevent relation New(X: P initiator) traced on initiator\n", "New"},
		{"entity type P\nentity relation P(P: P)\nevent relation Spec(X: P initiator) traced on initiator\n", "Spec"},
	} {
		cat := testkit.CompileSpec(t, "x.sdl", c.spec)
		if _, err := gogen.Generate(cat, c.spec, "x"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("spec with a relation named %s: error %v", c.want, err)
		}
	}
	if _, err := gogen.Generate(algebra.NewCatalog("x"), "", "not valid"); err == nil {
		t.Error("bad package name accepted")
	}
}

// TestCompileAndRun generates the differential spec's sensors into the
// module, compiles a small program that drives every kind of call with a
// real resident monitor, runs it and checks what its monitor saw.
func TestCompileAndRun(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a program")
	}
	cat, text := load(t, "../../testdata/differential/spec.sdl")
	src, err := gogen.Generate(cat, text, "diffsensors")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("testdata", "run-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, "diffsensors"), 0o755)
	os.WriteFile(filepath.Join(dir, "diffsensors", "diffsensors.go"), src, 0o644)
	prog := `package main

import (
	"context"
	"fmt"
	"time"

	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor/gogen/` + filepath.ToSlash(dir) + `/diffsensors"
)

func main() {
	res := resident.New(diffsensors.Spec(), resident.Options{Name: "t"})
	conn := res.Local()
	id := func(name string) uint16 {
		for i, n := range res.Hello().Sensors {
			if n == name {
				return uint16(i)
			}
		}
		panic(name)
	}
	typ := func(name string) uint16 {
		for i, n := range res.Hello().Types {
			if n == name {
				return uint16(i)
			}
		}
		panic(name)
	}
	for _, c := range []wire.Command{
		{Kind: wire.CEnable, Sensor: id("SendMessage"), Type: typ("Process"), Entity: "P1"},
		{Kind: wire.CEnableAll, Sensor: id("Waiting")},
		{Kind: wire.CEnableAll, Sensor: id("Interrupt")},
	} {
		if err := conn.Send(&c); err != nil {
			panic(err)
		}
	}
	s := diffsensors.New(res)
	cpu := s.NewCpu("C1")
	p1 := s.NewProcess("P1", diffsensors.ProcessStateRunning, 3)
	p2 := s.NewProcess("P2", diffsensors.ProcessStateReady, 1)
	m := s.NewMailbox("M1")
	s.SendMessage(p1, m, 5)
	s.SendMessage(p2, m, 6) // not enabled
	w := s.WaitingBegin(p2, m)
	run := s.RunningOnBegin(p1, cpu)
	s.SetProcessState(p1, diffsensors.ProcessStateWaiting, 3)
	s.Interrupt(cpu, 7)
	s.WaitingEnd(w)
	s.RunningOnEnd(run)
	s.DeleteProcess(p2)
	res.Close()
	counts := map[string]int{}
	for {
		b, err := conn.Recv()
		if err != nil {
			break
		}
		for _, p := range b.Packets {
			counts[fmt.Sprintf("%s/%s", res.Hello().Sensors[p.Sensor], p.Kind)]++
		}
	}
	_ = context.Background
	_ = time.Second
	fmt.Println(counts)
}
`
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(prog), 0o644)
	cmd := exec.Command("go", "run", "./"+filepath.ToSlash(dir))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("generated code does not build or run: %v\n%s", err, out)
	}
	// Entity relations: Cpu 1, Mailbox 1, Process 2 begins + 1 state
	// change (end and begin) + 1 delete; P1's send only; the wait (D,
	// whole at its end); the interrupt; no RunningOn (never sampled).
	want := "map[Cpu/entity-begin:1 Interrupt/event:1 Mailbox/entity-begin:1 Process/entity-begin:3 Process/entity-end:2 SendMessage/event:1 Waiting/whole:1]"
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("the monitor saw\n%s\nwant\n%s", got, want)
	}
}

// TestAttributeLimit: a sensed or entity relation with more attributes than
// the resident's packet holds is refused, with the place of its first
// attribute too many, by Check (tqmon sensors check) and Generate (tqmon
// sensors compile) alike, instead of panicking in the instrumented program;
// a relation only read from histories is not limited.
func TestAttributeLimit(t *testing.T) {
	attrs := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, ", A%d: int", i)
		}
		return b.String()
	}
	spec := "entity type P\nentity relation P(P: P)\n" +
		"event relation E(X: P performer" + attrs(12) + ") traced on performer\n" +
		"event relation H(X: P" + attrs(12) + ")\n"
	cat := testkit.CompileSpec(t, "x.sdl", spec)
	want := "x.sdl:3:97: E has 13 attributes; a sensed or entity relation has at most 8 (the resident's packet slots)"
	if err := gogen.Check(cat); err == nil || err.Error() != want {
		t.Errorf("Check: %v\nwant %s", err, want)
	}
	if _, err := gogen.Generate(cat, spec, "x"); err == nil || err.Error() != want {
		t.Errorf("Generate: %v\nwant %s", err, want)
	}
	ok := "entity type P\nentity relation P(P: P)\nevent relation H(X: P" + attrs(12) + ")\n"
	cat = testkit.CompileSpec(t, "x.sdl", ok)
	if err := gogen.Check(cat); err != nil {
		t.Errorf("a history-only relation was limited: %v", err)
	}
}
