// Package fleet carries the resident ↔ remote protocol (package wire,
// frames unchanged) over NATS, so that many hosts' residents join one
// NATS server (or cluster) and a monitor reaches them by host name.
//
// Subjects, for a resident serving host H (a NATS token: letters,
// digits, '-' and '_'):
//
//   - tqmon.H.ping — request/reply: answered while H is served; a second
//     resident joining as H is refused (ErrHostTaken).
//   - tqmon.discover — request/reply: every resident answers its host
//     name; Hosts collects the answers and keeps those a glob matches.
//   - tqmon.H.open — request/reply: the monitor names a session ID it
//     has already subscribed for; the reply is the encoded Hello.
//   - tqmon.H.s.ID.b — the session's frames, resident to monitor, each
//     with a sequence number (header Tqmon-Seq, 1, 2, …): encoded
//     batches, then one end frame (header Tqmon-End: empty for a normal
//     end, else why). Heartbeats (header Tqmon-Beat) carry no number.
//   - tqmon.H.s.ID.c — request/reply: one encoded command per request;
//     the reply is empty, or says in Tqmon-Error why the session is gone.
//   - tqmon.H.s.ID.a — the monitor's acknowledgements: the last frame
//     number it has taken.
//   - tqmon.H.j.ID — a durable session's Hello (frame 0), frames and end
//     frame, in the JetStream stream TQMON_FLEET, with retention: a
//     monitor killed and started again (Resume) reads them again from the
//     first (durable.go).
//
// Bounds and what they protect:
//
//   - Window (64) unacknowledged frames per session. The resident never
//     waits on a slow monitor with its subject: the session's pump waits
//     for acknowledgements and meanwhile the session's mailbox fills and
//     drops, counting, exactly as over gRPC (package session); a monitor
//     that acknowledges nothing for AckTimeout (10 s) is gone and its
//     session ends.
//   - Leases are heartbeats: the monitor renews its lease with CLease
//     commands (remote does); a monitor that dies stops renewing, and the
//     resident clears what its session enabled when the lease lapses
//     (TestDeadMonitorClears).
//   - A monitor reports the session lost — Recv returns an error that is
//     not io.EOF, which remote reports as a lost session (exit 3) — on a
//     missing frame number (a frame NATS dropped: TestMissingFrameIsLost)
//     or after Silence (10 s) with neither a frame nor a heartbeat from
//     the resident (TestSilentResidentIsLost); the resident beats every
//     Beat (1 s). A durable session's reader gets the stream's idle
//     heartbeats every second (consumeBeat): when the node its consumer
//     lives on dies, it reads on from another within about 2 s, well
//     inside Silence (TestDurableReaderNodeDies).
//   - Frames are at most the NATS server's max payload less 64 KiB for
//     headers, and at most wire.MaxFrame; larger batches are split.
//
// The session core (commands applied in order and never after close,
// batches pumped and released, commands sent and CBye last) is the gRPC
// transport's (transport.Served, transport.Sender), and the monitor's
// read-ahead queue is wire.Ahead: this package adds only how frames
// travel.
package fleet
