// Package resident will own the resident monitor that sits next to a subject
// system: enable tables (counters), packet buffers, the drain, sampling, the
// Go sensor runtime used by generated code, and the kernel (eBPF) resident.
// It depends on nothing above it. Nothing is implemented here yet.
package resident
