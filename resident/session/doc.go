// Package session is the core of a resident's sessions, shared by the Go
// resident (package resident) and the kernel resident (resident/kernel):
// what a session is whatever the subject.
//
//   - The table (Table): which sessions are open, by index (a packet's
//     destination is a 64-bit set of indices), at most MaxSessions.
//   - The lease (Core.Expired, CLease in Core.Command): a session whose
//     remote stops renewing it ends with ErrLeaseExpired, so a remote that
//     vanished leaves nothing enabled.
//   - Commands (Core.Command): numbered per session, refused with a
//     *CommandError naming the command and the field at fault, refused
//     with the session's error once it ended; CBye and CLease are carried
//     out here, every other kind by the resident.
//   - Enable counting (Enables): per session and key (a sensor and an
//     entity ID, or a sensor for whole-type enables), so that the
//     session's end undoes exactly what it set.
//   - The mailbox (Core.Deliver, Core.Enqueue, Core.Recv, Core.Release):
//     the packets a session was given but not sent, the batch Recv takes,
//     the batches given back for reuse, and the per-sensor packets lost
//     to a full session.
//
// A resident keeps a Core in each of its sessions and the sessions in a
// Table, both under its own lock (the lock that guards its enable
// tables), which Core.Command takes; the mailbox has a lock of its own,
// so the drain delivers while commands run.
//
// # Time
//
// Leases and the cadence of empty batches run on real monotonic time (ns),
// whatever clock the resident stamps packets with: the resident gives the
// core its real clock (Core.Init) and passes the time it read to Deliver
// and Expired, once per drain round.
//
// # Bounds
//
// Whatever a remote does, what its session makes the resident hold is
// bounded, and nothing the resident's threads do waits for the remote
// (limits.go states the defaults):
//
//   - packets: a session holds at most MaxHeld packets (65,536, ≈ 22
//     MB), held back by the watermark or in the batch its remote has not
//     taken, and all of a resident's sessions together at most
//     MaxHeldTotal (262,144, ≈ 85 MB; Budget). What does not fit is dropped and counted per sensor
//     in the session's counts (Count.Drops), which every batch carries,
//     so a remote that reads slowly, or never, learns exactly what it
//     lost; Deliver and Enqueue only copy, under the mailbox's own lock.
//     Every session has a Reserve (2,048 packets) the others cannot take:
//     sessions that never read fill at most half the budget, and a
//     remote that reads promptly beside them is still served. A session
//     that can take nothing (Full) may be shed by its resident — packets
//     dropped before they are made, counted with Shed — so that a remote
//     that never reads costs its subject next to nothing.
//   - enables: a session holds at most MaxEnables keys (Enables.Full),
//     pending ones (an entity that does not exist) included; one more is
//     refused.
//   - the lease: at most MaxLease; a longer one is refused. A remote that
//     stops renewing loses its session within its lease, and what it
//     held is freed.
//   - sessions: at most MaxSessions at once (Table.Add); the transport
//     adds its own limits per connection and per peer, and makes an idle
//     session give way when the table is full (package transport).
//
// Why these suffice for memory: a session's packets are bounded, the
// sum over sessions is bounded by the budget whatever their number, and
// enables are bounded per session; everything else a session holds is
// its commands' state, bounded by the resident's own limits (samplers,
// say). Why the subject never waits: the drain gives packets to a
// mailbox without ever waiting for its remote (Recv takes the batch
// under the same short lock), and the resident's lock is held by
// Command only for the command's own work.
package session
