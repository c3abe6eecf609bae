package bpfgen

import "github.com/cilium/ebpf/btf"

// Kernel is what generation needs to know about the running system.
type Kernel interface {
	// TracepointArgs returns the types of a tracepoint's arguments, in
	// TP_PROTO order (BTF's btf_trace_<event> without its leading
	// context pointer).
	TracepointArgs(event string) ([]btf.Type, error)
	// Func describes a function of an executable that a uprobe attaches
	// to.
	Func(path, symbol string) (*Func, error)
}

// Func is a function a uprobe attaches to.
type Func struct {
	// Go reports a binary built by the Go toolchain: its functions take
	// their arguments in registers by Go's internal ABI, and their
	// returns are probed at their RET instructions rather than with a
	// uretprobe (which rewrites the return address on the stack, and Go
	// stacks move and are walked).
	Go bool
	// Returns are the offsets of the function's RET instructions from
	// its start (Go binaries).
	Returns []uint64
}
