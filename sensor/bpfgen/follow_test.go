package bpfgen

import (
	"testing"

	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/sensor"
)

// uses says whether a program references a map.
func uses(p *Program, m string) bool {
	for _, in := range p.Spec.Instructions {
		if in.Reference() == m {
			return true
		}
	}
	return false
}

func usesFollow(p *Program) bool { return uses(p, MapFollow) }

// TestFollowPrograms: with Follow, exactly the programs that test the
// enable of a Process flag holder (and the fork and exit programs)
// consult the follow map,
// and the map is shared; without it nothing changes — the same
// instructions as Compile's — and there is no map.
func TestFollowPrograms(t *testing.T) {
	f, err := sdl.Parse("linux.sdl", linuxSDL(t))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := sensor.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Compile(cat, []*sdl.File{f}, fakeKernel{})
	if err != nil {
		t.Fatal(err)
	}
	off, err := CompileWith(cat, []*sdl.File{f}, fakeKernel{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Listing() != off.Listing() {
		t.Error("CompileWith without Follow differs from Compile")
	}
	on, err := CompileWith(cat, []*sdl.File{f}, fakeKernel{}, Options{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.SharedMaps(4096, 4096)[MapFollow]; ok {
		t.Error("a follow map without Follow")
	}
	if _, ok := on.SharedMaps(4096, 4096)[MapFollow]; !ok {
		t.Error("no follow map with Follow")
	}
	for _, s := range on.Sensors {
		for _, p := range s.Programs() {
			if want := s.FlagType == "Process" && uses(p, MapEnable); usesFollow(p) != want {
				t.Errorf("%s (flag %s): uses the follow map %v, want %v", p.Name, s.FlagType, !want, want)
			}
		}
	}
	for _, s := range plain.Sensors {
		for _, p := range s.Programs() {
			if usesFollow(p) {
				t.Errorf("%s uses the follow map without Follow", p.Name)
			}
		}
	}
	for _, p := range on.Entities {
		if want := p.Name != "tqm_exec"; usesFollow(p) != want {
			t.Errorf("%s: uses the follow map %v, want %v", p.Name, !want, want)
		}
	}
}
