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
// The limits on what a session makes its resident hold are kept here:
// the packets held back for a session (beyond a bound they are dropped
// and counted, and every batch's counts include those drops), the
// sessions open at once (Table.Add), and the lease a remote asks for
// (Command). (The batch a remote has not taken yet, and how many keys a
// session enables, are not bounded.)
package session
