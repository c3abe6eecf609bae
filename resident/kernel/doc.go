// Package kernel is the kernel resident: the Linux kernel of this machine
// as a subject system, its sensors eBPF programs (see sensor/bpfgen)
// generated from the built-in description linux.sdl and any extensions
// (uprobe sensors of user programs). It speaks the resident protocol
// (resident/wire) like the Go resident: in process through Local, or as
// a daemon through Sessions and resident/transport.
//
// Its sessions are built on the session core it shares with the Go
// resident (resident/session): the session table, leases, command
// numbering, refusals (*session.CommandError) and the errors a session
// ends with (session.ErrClosed, ErrLeaseExpired, ErrTooManySessions),
// per-session enable counts, and the mailbox each drain round delivers
// to. Unlike package resident, which sits inside subject programs and
// depends on nothing above it, this resident compiles its own
// description: it imports grammar/sdl, sensor and sensor/bpfgen (and
// algebra for the catalog); the monitor's code (remote, the rewriter, the
// interpreter) only through package plans, the plan-fragment runner it
// shares with the Go resident (plan.go).
//
// # Bounds
//
// Whatever its monitors do, what the resident holds is bounded and the
// subject's threads never wait for a monitor — the same bounds as the Go
// resident's, from the code they share:
//
//   - the session core's (package session): packets held per session and
//     in all (session.MaxHeld, session.MaxHeldTotal; beyond, dropped and
//     counted in the session's batches, so delivered + lost = produced),
//     each session's reserve of that (session.Reserve: sessions that
//     never read cannot starve one that does), keys enabled per session
//     (session.MaxEnables), the longest lease (session.MaxLease), at most
//     session.MaxSessions sessions;
//   - the transport's, when served through resident/transport (`tqmon
//     resident --kernel --listen`): unauthenticated connections and the
//     time to authenticate, sessions per connection and per peer, idle
//     sessions evicted when all are taken (see that package;
//     TestKernelSessionsPerPeer);
//   - its own: a sensor's eBPF enable map holds bpfgen.EnableEntries
//     (4,096) entity IDs over all sessions; one more enable is refused
//     with a *session.CommandError naming the bound (enable the whole
//     type instead), so 300,000 enables for processes that do not exist
//     cost the resident nothing (TestKernelHostileEnables). Entity
//     selections hold bpfgen.CommSelEntries (64) command names (one more
//     is refused) and bpfgen.EntSelEntries (32,768) processes at once
//     (past it, the sensor fires for every process: the same answer,
//     more packets, logged; TestEntSelBoundFallsBack). Its ring
//     buffers (Options.RingBytes, EntityRingBytes) and maps are sized
//     when it starts; a program that finds the ring full drops its packet
//     and counts it, never waits. The drain hands a round no more records
//     than the session with the most room can hold, nor more than
//     roundMax; the rest wait in the ring itself — the drain notes them
//     (25 bytes a record, at most RingBytes/16 records) and copies none —
//     so a monitor that falls behind loses nothing until the ring is
//     full, and then the kernel counts every packet it drops, which the
//     next batch reports (TestConsumerBehindLosesNothing,
//     TestDrainHoldsNoBytes; see drain.go). A round's packets and
//     decoded values go to the sessions' batches without copies, at most
//     session.MaxHanded such batches waiting per session, each holding
//     at most twice its packets' storage or session.HandFloor
//     (session.Core.Handoff; TestHandoffBound): no allocation per event
//     in steady state (TestDrainAllocations);
//   - plan fragments (CPlan, served sessions only; plan.go, package
//     plans): per fragment 64 MiB of operator state (at most 256 MiB),
//     2^20 result tuples open, Options.PlanQueue (65,536) results
//     waiting for the monitor; 4 fragments at once, equal ones shared,
//     64 KiB of program each. Past any, the fragment stops and the run
//     is incomplete, not wrong (TestKernelPlanStateBound,
//     TestKernelPlanSessions). A fragment reads its own session as a
//     remote monitor would: the drain never waits for it, so it cannot
//     make the ring overflow sooner than a slow monitor can.
//
// TestKernelHostileNeverReads runs a workload of 800,000 system calls
// under five sessions that keep their leases and never read beside an
// honest one: the subject keeps at least 0.4 of its rate under the honest
// session alone (medians of interleaved runs), and the honest session is
// still served, every loss counted.
//
// # Life cycle
//
// New compiles the description and checks that kernel sensors can run
// (root, BPF, BTF, x86-64; else ErrUnavailable) — and attaches nothing.
// The first session (Open, Local) starts the tracking: the shared maps
// and ring buffers, the process and thread programs (sched_process_fork,
// exec, exit), the processes and threads already running (read from
// /proc), the processors (sysfs), and the drain. A sensor's programs are
// loaded and attached on its first enable (CEnable for an entity, or
// CEnableAll) and detached on its last disable: a sensor with no enabled
// entity costs nothing. When the last session ends (Close, CBye, lease
// expiry) everything is detached; Resident.Close does the same for all
// sessions after a last drain. Everything attached is held by file
// descriptors (BPF links), never pinned: a resident killed with SIGKILL
// leaves nothing behind.
//
// # Enables
//
// Enables are counted per (sensor, entity ID) over sessions and written
// to the sensor's enable map in the kernel (ID → count); whole-type
// enables to a flag programs read with one load. A program tests its flag
// holder there before making any packet. Entity IDs are what users see:
// a Process's pid (thread group ID), a Thread's ID, a Processor's number.
// An enable names an ID, so — as in the Go resident — it also covers a
// later process that reuses the pid (rare: pids are reused only after
// wrapping around pid_max). The resident does not evaluate triggers on
// sensed relations (its Hello does not advertise wire.CapTriggers): the
// remote widens the sensors such a join restricts instead. It does
// evaluate entity selections (wire.CapEntityTriggers, wire.CapWhile: a
// sensor enabled for the processes with a command, while they have it),
// in the kernel, at the processes' fork and exec (entsel.go).
//
// # Selections
//
// A session's fragments (wire.CFragment, wire.CapFragments) are
// selections on a sensor's own attributes; the resident compiles the or
// of those of the sessions that enable the sensor into its programs,
// before a packet is counted or reserved, and replaces the programs
// atomically when it changes: each program is attached as a stub that
// tail-calls it (filter.go, bpfgen/filter.go). The drain then sends each
// session only what its own fragments pass (the sieve, filter.go), and
// counts what they filter out as not wanted by it. Results never depend
// on them: the remote monitor selects again. Options.NoSelections turns
// both off (for comparing).
//
// # Packets and time
//
// Programs stamp packets with the kernel's CLOCK_MONOTONIC, the clock the
// Hello's MonoBase maps to the global clock. Every millisecond the drain
// reads the clock (D0), then everything committed in the entity ring and
// the packet ring (programs read the clock after reserving their record,
// so a record not yet read has a time ≥ D0), applies the records stamped
// before D0 in time order — entity records update the entity table,
// packets resolve their entity numbers to entities and go to the sessions
// that enable their flag holder — and gives each session its packets
// with watermark D0 − 1, and the kernel's per-CPU counts of packets
// wanted and dropped (delivered + dropped = wanted).
//
// # Identity
//
// Entities have keys for the resident's life: a process and a later one
// with the same pid are two entities with one ID, their Process tuples
// one after the other. Packets that come after an entity's end (a
// thread's last context switch follows its exit) name the entity that
// ended. Intervals pair their begin and end by task (its address), which
// unlike a thread ID survives an exec from a non-leader thread.
package kernel
