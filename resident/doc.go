// Package resident is the resident monitor that sits inside a subject Go
// program: the enable tables (counters), the packet rings and their drain,
// sampled-state tables and samplers, and the sessions of the remote
// monitors it serves. Generated sensor code calls it; remote monitors talk
// to it through wire.Conn (Local in process, or a transport). It depends
// on nothing above it: of this module it imports only resident/wire and
// resident/session, the session core it shares with the kernel resident
// (the session table, leases, command numbering and errors, per-session
// enable counts, the mailbox a drain round delivers to).
//
// # Generated code
//
// A subject's generated code builds a Spec, calls New once, creates and
// deletes entities (Create, SetState, Delete) and calls the sensors:
//
//	// an event relation, traced
//	if s.Armed() {
//		v := [2]resident.Value{{E: proc}, {E: mbox}}
//		s.Event(v[:])
//	}
//
//	// an interval relation, traced: Begin always (it reads the clock even
//	// when disarmed — End may need the begin time), End always (it returns
//	// at once when there is nothing to do)
//	v := [2]resident.Value{{E: proc}, {E: mbox}}
//	iv := s.Begin(v[:])
//	...
//	s.End(iv, v[:])
//
//	// a sampled relation: StateBegin and StateEnd always (the state table
//	// must hold every live tuple for a later sampling request)
//	iv := s.StateBegin(v[:])
//	...
//	s.StateEnd(iv, v[:])
//
// Armed is one atomic load and inlines, so a disarmed sensor costs next to
// nothing; the values array lives on the caller's stack (sensor calls do
// not let it escape) and the enabled path does not allocate.
//
// When the sensor call sits in a generated function (a method the subject
// calls), that function must itself inline for the gate to cost nothing:
// with the values array and the Event call in it, it exceeds the
// inliner's budget. Keep the slow path out of line:
//
//	func (s *Sensors) SendMessage(p Process, m Mailbox) {
//		if s.sendMessage.Armed() {
//			s.sendMessageSlow(p, m) // //go:noinline, builds v, calls Event
//		}
//	}
//
// (BenchmarkSensorDisabledWrapper against BenchmarkSensorDisabledCall:
// +0.03 ns against +0.5 ns over the uninstrumented work.)
//
// # Enabling
//
// Enable flags are counters per (sensor, entity ID), summed over sessions;
// each session remembers what it set (session.Enables), so its end
// (Close, CBye, lease expiry) undoes exactly that. An enable for an ID with no live entity is
// pending: it applies when an entity with that ID is created. Whole-type
// enables (CEnableAll) cover every entity of the flag holder's type,
// existing or future. A packet goes to a session only if that session's
// enablement holds the flag holder when the sensor fires. Triggers
// (CTrigger) enable a sensor for an entity named by another sensor's
// packet, before that sensor call returns; on an entity relation, by the
// entity's tuple as it begins (and at installation, for the entities whose
// current tuple matches: a walk of that type's live entities under the
// enable lock, as CEnableAll's). A While trigger holds the enable only
// while the entity's current tuple matches, taken back when a tuple that
// does not match begins or the entity ends, before that entity operation
// returns. A counting trigger (CTrigger with Count) enables the entity
// once Count of its packets fell within the window (count.go) — with
// While, only while they do: the drain takes it back in its first round
// after the count falls. When a while trigger takes an enable back, the
// target's tuples in progress on the entity are still sent their end
// (owe.go).
//
// Late begins: a session that enables (CEnable, CEnableAll) a traced (T)
// interval sensor is sent, at once, a begin for each tuple of it in
// progress that the session now wants, stamped then and carrying when the
// tuple began (beginOpen, sensor.go); its end follows as any begun
// tuple's, even if the session is disabled meanwhile. So a monitor sees
// the tuples in progress at the start of its observation begin there, on
// time, rather than only at their end.
//
// Traced-then-disabled (D) sensors: the paper's D sensor decrements its
// flag's counter when it fires, and the monitor re-arms it as long as the
// α operator's argument still holds the entity. Here the resident re-arms
// at once while any session holds the entity, so the net effect — which is
// what is implemented, without the counter traffic — is that a D sensor
// fires for every tuple while enabled: an event at its instant, an
// interval once, whole (PWhole), at its end. This is exact whatever the
// number of matches per enabling.
//
// Fragments (CFragment) narrow what is sent, not what is enabled: a
// session's packets of a sensor pass its fragments' predicates and carry
// only the attributes they keep; triggers, samplers' state and the truth
// sink see every packet. See fragment.go for where they run and how they
// count.
//
// # Packets
//
// Producers write fixed-size slots into a bounded ring of their own P
// (ring.go: one single-producer ring per P, the goroutine pinned to its P
// for the write, no locked instruction on the way), claiming the slot
// before reading the clock (tsc.go: the TSC where it can be trusted);
// the drain (drain.go) merges the rings by timestamp and turns slots into
// wire packets per session, which each session's mailbox
// (session.Core.Deliver) sends in timestamp order, closed by watermarks. A
// full ring drops the packet and counts it: per sensor, packets delivered
// + dropped = wanted. Entity relation packets go to every session; the
// last eighth of each ring is kept for them, so a flood of sensor packets
// does not drop them; when even that is full they are dropped and
// counted on the entity relation at once (a loss every session is told
// of), never waited for. Sampling (sample.go) runs in the drain.
//
// # Bounds
//
// Whatever remote monitors do, the subject's added memory is bounded and
// its threads do not wait on a monitor. The session core bounds what a
// session holds (package session: at most session.MaxHeld packets per
// session, 65,536, ≈ 22 MB; session.MaxHeldTotal for all, 262,144,
// ≈ 85 MB, of which each session has a session.Reserve of 2,048 the
// others cannot take; drops counted; session.MaxEnables keys enabled,
// pending ones included; session.MaxLease); the resident adds:
//
//   - rings: Options.Slots per P (16384 slots of 64 bytes, 1 MB per P),
//     made once.
//   - entity updates never wait: Create, SetState and Delete write their
//     packets with the resident's lock held, so they never wait for ring
//     room; a full ring drops them, counted on the entity relation
//     (TestHostileEntityFlood).
//   - shedding (shed.go): a session that is full (it holds MaxHeld, or
//     the budget grants it nothing more) costs the subject no packet
//     writes of its own — an event only full sessions want is counted as
//     dropped, not written — and the drain drops its packets undecoded;
//     delivered + dropped = wanted still holds. With a monitor that keeps its lease and never reads, the
//     subject keeps ≥ 0.9 of its throughput with no monitor
//     (BenchmarkHostileMonitorNeverReads, make bench-safety: 0.98–0.99
//     on the reference machine).
//   - sampling: at most maxSamplers (64) requests per session, each of
//     period at least minSamplePeriod (1 ms, the drain's period). A
//     round samples for at most sampleBudget (0.1 ms: a tenth of a
//     core at most), late ticks exactly (the grace log); a sampler
//     never falls more than maxCatchUp (1,024) ticks behind: ticks
//     before those are skipped, and the samples of the tuples only they
//     would have shown — valid at a skipped tick, never reported, ended
//     before the first tick that runs — are counted as lost for its
//     session (TestSamplerSkipCountsHiddenTuples); tuples the next ticks
//     re-confirm lose nothing. So sampling cannot keep the drain from
//     the rings, nor fall permanently behind catching up.
//   - triggers: at most maxTriggers (32) per session; a trigger runs in
//     the subject's thread on each packet of its sensor, so this bounds
//     what a monitor adds to each sensor call (TestHostileTriggers).
//   - counting triggers (count.go: two-phase monitoring's first phase):
//     at most maxCountTriggers (4) per session, each counting at most
//     maxCountKeys (1,024) entities of at most wire.MaxCount (64)
//     timestamps; an entity it has no room for is enabled at once (a
//     superset, exact), never waited for (TestCountTriggerBound,
//     TestHostileCountTriggers); a while one's enable is taken back by
//     the first drain round after its count falls, never before
//     (TestCountWhileDisables, TestCountWhileDrainLag), the drain paying
//     a scan of at most maxCountKeys enabled entities per trigger only
//     in rounds where one may have fallen (TestHostileCountWhileTriggers).
//   - fragments: at most maxFragments (64) per session and
//     maxSessionCmps (64) comparisons in their predicates (each at most
//     wire.MaxPredNodes nodes, wire.MaxPredDepth deep); the producer
//     evaluates a sensor's predicates only while they hold at most
//     maxEarlyCmps (32) comparisons over every session, the drain
//     otherwise (fragment.go; TestHostileFragments).
//   - plan fragments (CPlan; fragment_plan.go and package plans, the
//     runner the kernel resident shares): operator state within the
//     command's bound (remote.DefaultFragmentLimit, at most
//     remote.MaxFragmentLimit), at most remote.MaxFragmentOpen result
//     tuples open and Options.PlanQueue result packets waiting for the
//     monitor; past any, the fragment stops and says where
//     (TestLivePlacedStateBound, TestPlanOutputBound). At most plans.MaxPlans
//     (4) run at once, equal ones shared, each program at most
//     plans.MaxText (64 KiB) (TestPlanFragmentsBound). It runs in
//     goroutines of its own over a session of the resident's own, whose
//     bounds are any session's.
//   - locks: the resident's lock (r.mu) is never held while waiting for
//     the samplers' lock, which a sampling round holds: removing a
//     sampler (CUnsample, a session's end) marks it, and the next round
//     drops it; an entity operation holds r.mu while it writes its
//     packets, and never waits for ring room. The drain takes r.mu only
//     to take back while counting triggers' enables (at most
//     maxCountKeys entities per trigger, after the trigger's own lock is
//     released: the order is r.mu, then a counter's lock).
//
// The hostile-monitor tests (hostile_test.go) check these against an
// unmonitored (or honestly monitored) twin run in alternating slices, on
// medians, so that a loaded machine slows both alike: a monitor that
// never reads, one that pauses past its lease, 1,000 sampling requests,
// 300,000 enables for entities that do not exist, a flood of entity
// updates, a flooded subject. Each asserts the subject's median rate ≥
// 0.33 of its twin's, its median longest operation ≤ max(100 ms, 3× the
// twin's) and every operation ≤ max(1.5 s, 3× the twin's longest), the
// honest monitor's share of its packets ≥ half its share on the twin,
// heap growth < 96 MB, and delivered + dropped = wanted.
//
// # Truth
//
// With Options.Truth, every sensor is armed and every tuple is reported to
// the sink, with the timestamp its packet carries (or would carry),
// whatever is enabled: the ground truth live results are compared with.
package resident
