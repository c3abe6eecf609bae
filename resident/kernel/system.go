package kernel

import (
	"debug/elf"
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/arch/x86/x86asm"

	"github.com/tqmon/tqmon/sensor/bpfgen"
)

// system is bpfgen.Kernel for the running kernel (its BTF) and the
// executables on disk (their ELF files).
type system struct {
	once sync.Once
	spec *btf.Spec
	err  error
}

func (s *system) btf() (*btf.Spec, error) {
	s.once.Do(func() {
		s.spec, s.err = btf.LoadKernelSpec()
		if s.err != nil {
			s.err = fmt.Errorf("reading the kernel's BTF (/sys/kernel/btf/vmlinux): %w", s.err)
		}
	})
	return s.spec, s.err
}

// TracepointArgs reads the prototype of a tracepoint from BTF
// (btf_trace_<event>, a pointer to a function whose first parameter is
// the tracepoint's context).
func (s *system) TracepointArgs(event string) ([]btf.Type, error) {
	spec, err := s.btf()
	if err != nil {
		return nil, err
	}
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_"+event, &td); err != nil {
		return nil, fmt.Errorf("the kernel has no such tracepoint (no btf_trace_%s in its BTF)", event)
	}
	ptr, ok := td.Type.(*btf.Pointer)
	if !ok {
		return nil, fmt.Errorf("btf_trace_%s is not a function pointer", event)
	}
	fp, ok := ptr.Target.(*btf.FuncProto)
	if !ok || len(fp.Params) == 0 {
		return nil, fmt.Errorf("btf_trace_%s is not a function pointer", event)
	}
	out := make([]btf.Type, len(fp.Params)-1)
	for i, p := range fp.Params[1:] {
		out[i] = p.Type
	}
	return out, nil
}

// Func finds a function in an executable's symbol table; for a Go
// binary, it also disassembles the function to find its RET
// instructions.
func (s *system) Func(path, symbol string) (*bpfgen.Func, error) {
	return elfFunc(path, symbol)
}

func elfFunc(path, symbol string) (*bpfgen.Func, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("%s is for %s: uprobes are supported on x86-64 executables only", path, f.Machine)
	}
	syms, err := f.Symbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, err
	}
	dyn, _ := f.DynamicSymbols()
	syms = append(syms, dyn...)
	var sym *elf.Symbol
	for i := range syms {
		if syms[i].Name == symbol && elf.ST_TYPE(syms[i].Info) == elf.STT_FUNC && syms[i].Value != 0 {
			sym = &syms[i]
			break
		}
	}
	if sym == nil {
		return nil, fmt.Errorf("no function %s in %s's symbol table", symbol, path)
	}
	fn := &bpfgen.Func{Go: f.Section(".go.buildinfo") != nil || f.Section(".gopclntab") != nil}
	if !fn.Go {
		return fn, nil
	}
	code, err := funcBytes(f, sym)
	if err != nil {
		return nil, err
	}
	for off := 0; off < len(code); {
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: disassembling %s at +%#x: %v", path, symbol, off, err)
		}
		if inst.Op == x86asm.RET {
			fn.Returns = append(fn.Returns, uint64(off))
		}
		off += inst.Len
	}
	return fn, nil
}

// funcBytes returns a function's machine code.
func funcBytes(f *elf.File, sym *elf.Symbol) ([]byte, error) {
	if sym.Size == 0 {
		return nil, fmt.Errorf("symbol %s has no size", sym.Name)
	}
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_PROGBITS || sym.Value < sec.Addr || sym.Value+sym.Size > sec.Addr+sec.Size {
			continue
		}
		buf := make([]byte, sym.Size)
		if _, err := sec.ReadAt(buf, int64(sym.Value-sec.Addr)); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return nil, fmt.Errorf("symbol %s is in no section", sym.Name)
}
