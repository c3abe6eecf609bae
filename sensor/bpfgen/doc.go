// Package bpfgen generates the eBPF programs of kernel sensors from the
// sensor bindings of a description (`sensor Name at tracepoint …`,
// `sensor Name at uprobe "/path" "symbol" …`), with cilium/ebpf's asm
// package: no C compiler at run time.
//
// Compile checks a description's bindings against its catalog and the
// running kernel (tracepoint prototypes and struct layouts from BTF,
// executables' symbols from their ELF files, all behind the Kernel
// interface, so that generation is deterministic and testable without
// root) and returns a Spec: per sensor its programs (one per probe
// clause), its private maps and the layout of its packets, plus the
// built-in entity programs (process and thread lifecycle) and the shared
// maps (ring buffers, per-CPU counters, whole-type enable flags).
//
// Every generated program follows one shape:
//
//  1. its firing conditions (`when`), cheapest first;
//  2. the flag holder's enable test: the whole-type flag (one load from an
//     array map's value), then a lookup of the entity's ID in the sensor's
//     enable map (a counter; traced-then-disabled sensors decrement it) —
//     a disabled sensor stops here, before any packet is made (generated
//     with entity selections, it then tests the flag holder's bit in
//     entsel: see EntitySelections);
//  3. when generated with one (Sensor.Filter), the selection the
//     sessions placed in the kernel, on the values the packet would carry
//     (filter.go) — a packet it rejects is not wanted;
//  4. the per-CPU count of packets the sensor wanted to write;
//  5. a ring buffer reservation (a failure counts a drop: delivered +
//     dropped = wanted, exactly), the clock read after the reservation
//     (so that a drain that reads the clock and then the ring's producer
//     position has every packet stamped before it), the values, and a
//     submit without wake-up (the resident polls).
//
// A sensor's programs are attached through stubs (Sensor.Stubs) that
// tail-call them, so that the resident replaces them — a new selection —
// with one map update.
//
// Intervals pair a begin probe with an end probe through a key (by
// default the current thread for tracepoints; the process and the stack
// pointer at entry for uprobes, which also pairs recursive calls): the
// begin stores its time (and, when the end fills attributes too, its
// values) in an LRU hash keyed by it; the end finds, deletes and reports
// it. An interval whose attributes are all known at its begin is
// reported as a begin and an end packet; one with attributes filled at
// its end (a system call's result) as one whole packet at its end.
//
// Instructions carry the spec position they come from (a comment in
// listings, and Program.Source for verifier errors), so a program the
// verifier rejects is reported at the spec line that made it.
package bpfgen
