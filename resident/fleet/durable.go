package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tqmon/tqmon/resident/transport"
)

// Durable sessions: a resident publishes a durable session's frames to
// the JetStream stream Stream (subject tqmon.H.j.ID), so that a monitor
// killed without a word can be started again and resume (Resume): the
// frames it had not taken, and those sent while it was away, wait in the
// stream, with retention.
//
// Subjects a durable session adds (tqmon.H.s.ID.c and .b stay: commands,
// and heartbeats, on core NATS):
//
//   - tqmon.H.j.ID — the session's frames, in the stream: first the
//     session's Hello (header Tqmon-Seq 0), then frames 1, 2, … and the
//     end frame, exactly as tqmon.H.s.ID.b carries them for a session
//     that is not durable. Each is published with a message ID
//     (Nats-Msg-Id ID.N) and waits for the stream's acknowledgement,
//     published again on a timeout (a node of a cluster that died): the
//     stream's duplicate window keeps it once.
//
// Bounds: the stream keeps at most MaxAge and MaxBytes of every host's
// frames (StreamOptions; defaults DefaultRetainAge, DefaultRetainBytes),
// the oldest dropped first. A durable session's frames never wait for
// the monitor (it may be dead): they wait only for the stream, at most
// StoreWait each, after which the session ends with the error. A
// monitor resuming a session whose first frames the stream dropped is
// refused with a *GoneError (exit 3), never answered with a hole.

// Stream is the JetStream stream of durable sessions' frames.
const Stream = "TQMON_FLEET"

// Monitors is the key-value bucket of resumable monitors' state (Resume).
const Monitors = "TQMON_MONITORS"

// Defaults of StreamOptions.
const (
	DefaultRetainAge   = 24 * time.Hour
	DefaultRetainBytes = 256 << 20
	// StoreWait bounds how long a durable session's frame waits for the
	// stream's acknowledgement (publishing again meanwhile) before the
	// session ends: long enough for a cluster to elect a new leader for
	// the stream when a node dies.
	StoreWait = 30 * time.Second
	// endWait bounds how long a durable session's end frame waits for
	// the stream (a resident that stops because its server went away
	// does not hang for StoreWait).
	endWait = 10 * time.Second
	// ensureWait bounds how long OpenResume asks for the stream and the
	// bucket to be made.
	ensureWait = 15 * time.Second
)

// hResume and hDurable are the open request's headers: a durable session
// to open, or the session ID to resume; hSeq 0 marks the stored Hello.
const (
	hDurable = "Tqmon-Durable"
	hResume  = "Tqmon-Resume"
	hCmd     = "Tqmon-Cmd" // a durable session's command number (CLease and CBye have none)
)

// StreamOptions shape the stream and the bucket a resumable monitor
// creates (or updates) before it opens durable sessions.
type StreamOptions struct {
	// MaxAge and MaxBytes bound what the stream keeps of all hosts'
	// frames (0: DefaultRetainAge, DefaultRetainBytes).
	MaxAge   time.Duration
	MaxBytes int64
	// Replicas is how many nodes of a cluster keep the stream and the
	// bucket (0: 1). With 3, a node that dies loses nothing.
	Replicas int
}

func (o StreamOptions) fill() StreamOptions {
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultRetainAge
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultRetainBytes
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	return o
}

// EnsureStream creates the stream of durable sessions, or updates its
// limits.
func EnsureStream(ctx context.Context, js jetstream.JetStream, o StreamOptions) (jetstream.Stream, error) {
	o = o.fill()
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: Stream, Subjects: []string{"tqmon.*.j.*"},
		Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld, MaxAge: o.MaxAge, MaxBytes: o.MaxBytes,
		Storage: jetstream.FileStorage, Replicas: o.Replicas, Duplicates: 2 * time.Minute})
	if err != nil {
		return nil, fmt.Errorf("fleet: the stream %s: %w", Stream, err)
	}
	return st, nil
}

// journalSubject is where host's durable session id's frames go.
func journalSubject(host, id string) string { return subj(host, "j", id) }

// GoneError: a resumed session's first frames are no longer in the
// stream (its retention dropped them), so the monitor cannot rebuild its
// answer's state: the answer printed before stands, up to its
// watermark, and nothing after it is observed. It is an incomplete run
// (exit 3), never a silent one.
type GoneError struct {
	Host, Name string
	Why        string
}

func (e *GoneError) Error() string {
	return fmt.Sprintf("fleet: resuming %s: host %s: %s (the stream %s keeps --retain and --retain-bytes): the answer printed before stands up to its watermark; nothing after it is observed",
		e.Name, e.Host, e.Why, Stream)
}

// storedHello reads the Hello a durable session stored first in the
// stream: a *GoneError when its first message is not there.
func storedHello(ctx context.Context, st jetstream.Stream, host, id, name string) ([]byte, error) {
	m, err := st.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(journalSubject(host, id)))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, &GoneError{Host: host, Name: name, Why: "the stream holds none of its session's frames"}
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: host %s: reading the stream: %w", host, err)
	}
	if n := m.Header.Get(hSeq); n != "0" {
		return nil, &GoneError{Host: host, Name: name, Why: fmt.Sprintf("the stream no longer holds its session's frames before frame %s", n)}
	}
	return m.Data, nil
}

// store publishes a durable session's frame m (its number seq) to the
// stream and waits for the acknowledgement, publishing again (the same
// message ID: kept once) until StoreWait.
func (s *session) store(ctx context.Context, m *nats.Msg, seq uint64) error {
	m.Subject = journalSubject(s.srv.host, s.id)
	id := s.id + "." + strconv.FormatUint(seq, 10)
	deadline := time.Now().Add(StoreWait)
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := s.srv.js.PublishMsg(actx, m, jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the stream %s did not keep frame %d for %v: %w", Stream, seq, StoreWait, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Resume is a resumable monitor's state, kept under its name in the
// key-value bucket Monitors: the durable session it opened on each host,
// and how far its answer has gone out (Out): the merged watermark up to
// which it was printed, and in how many bytes.
//
// Why a key-value entry and not a durable consumer's acknowledgement
// floor: what must survive the monitor is not a position in one host's
// frames but its answer's progress, one point over every host at once
// (the merged watermark, and the bytes printed up to it). A consumer's
// ack floor is per consumer, so per host: acknowledging host h1's frame
// says nothing of where the merge over h1, h2 and h3 was, and a monitor
// must not acknowledge a frame before every answer it contributes to has
// gone out — which, for a tuple still open or an aggregate, is never
// until the run ends. And the answer's state (tuples open, counts)
// depends on every frame since the session began, so a resumed monitor
// reads each host's frames again from the first, whatever was
// acknowledged: the ack floor would be kept and never used. One entry,
// put after each flush of the answer, says exactly what went out; the
// bucket is a stream too, so it has the stream's replicas.
type Resume struct {
	Name string
	// Found: the bucket held state under Name (a run before, killed);
	// the sessions are resumed, not opened.
	Found bool
	State ResumeState

	nc  *nats.Conn
	js  jetstream.JetStream
	kv  jetstream.KeyValue
	st  jetstream.Stream
	opt StreamOptions
}

// ResumeState is what the bucket keeps of a resumable monitor.
type ResumeState struct {
	// Hosts are the durable session IDs, by host.
	Hosts map[string]string `json:"hosts"`
	// Queries identifies the queries and output format (a hash): a
	// resumed run must print the same answer.
	Queries string `json:"queries"`
	// Out is how far the answer went out.
	Out Output `json:"out"`
}

// Output is how far a resumable monitor's answer went out (Committed: at
// least once): the marks of what was printed, one per statement, at the
// merged watermark WM, in N bytes; when the answer goes to a regular
// file, which one (Dev, Ino) and where in it the answer began (Base).
type Output struct {
	Committed bool   `json:"committed,omitempty"`
	Marks     []Mark `json:"marks,omitempty"`
	WM        int64  `json:"wm"`
	N         int64  `json:"n"`
	File      bool   `json:"file,omitempty"`
	Dev       uint64 `json:"dev,omitempty"`
	Ino       uint64 `json:"ino,omitempty"`
	Base      int64  `json:"base,omitempty"`
}

// A Mark says how far one statement's answer went out: every result
// element before time T, and at T those whose keys At counts (how many
// of each). A statement's elements come in time order (see
// subject.Checkpoint).
type Mark struct {
	T  int64          `json:"t"`
	At map[uint64]int `json:"at,omitempty"`
}

// Add notes an element printed at t (t at or after m.T).
func (m *Mark) Add(t int64, key uint64) {
	if t != m.T || m.At == nil {
		m.T, m.At = t, map[uint64]int{}
	}
	m.At[key]++
}

// Take reports whether an element at t, of key, is within m (and takes
// it: an element printed once is within once).
func (m *Mark) Take(t int64, key uint64) bool {
	switch {
	case m.At == nil || t > m.T:
		return false
	case t < m.T:
		return true
	case m.At[key] > 0:
		m.At[key]--
		return true
	}
	return false
}

// Clone is a copy of m.
func (m Mark) Clone() Mark { return Mark{T: m.T, At: maps.Clone(m.At)} }

// OpenResume connects to url (with token and sec, as Connect), creates
// (or updates) the stream and the bucket with o, and reads the state kept
// under name.
func OpenResume(ctx context.Context, url, token, name string, o StreamOptions, sec ...transport.Security) (*Resume, error) {
	if err := CheckHost(name); err != nil {
		return nil, fmt.Errorf("fleet: --resume %q: want 1 to 64 letters, digits, '-' or '_'", name)
	}
	o = o.fill()
	nc, err := Connect(url, token, "tqmon monitor "+name, sec...)
	if err != nil {
		return nil, err
	}
	r := &Resume{Name: name, nc: nc, opt: o}
	fail := func(err error) (*Resume, error) { nc.Close(); return nil, err }
	if r.js, err = jetstream.New(nc); err != nil {
		return fail(fmt.Errorf("fleet: %w", err))
	}
	// A cluster just started may not have elected its JetStream leader
	// yet, nor have the peers a stream's replicas need: asked again, up
	// to ensureWait.
	for deadline := time.Now().Add(ensureWait); ; {
		if r.st, err = EnsureStream(ctx, r.js, o); err == nil {
			r.kv, err = r.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: Monitors, Replicas: o.Replicas,
				Description: "tqmon: resumable monitors' state (--resume)"})
			if err != nil {
				err = fmt.Errorf("fleet: the bucket %s: %w", Monitors, err)
			}
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil || time.Now().After(deadline) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
			return fail(err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	e, err := r.kv.Get(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return fail(fmt.Errorf("fleet: reading %s's state: %w", name, err))
	default:
		if err := json.Unmarshal(e.Value(), &r.State); err != nil {
			return fail(fmt.Errorf("fleet: %s's state in %s: %w", name, Monitors, err))
		}
		r.Found = true
	}
	return r, nil
}

// Save puts the state.
func (r *Resume) Save(ctx context.Context) error {
	b, err := json.Marshal(r.State)
	if err == nil {
		_, err = r.kv.Put(ctx, r.Name, b)
	}
	if err != nil {
		return fmt.Errorf("fleet: saving %s's state: %w", r.Name, err)
	}
	return nil
}

// Commit notes how far the answer went out and saves it.
func (r *Resume) Commit(ctx context.Context, out Output) error {
	r.State.Out = out
	return r.Save(ctx)
}

// Finish forgets the state: the run ended in this process (its sessions
// closed), and there is nothing to resume.
func (r *Resume) Finish(ctx context.Context) error {
	if err := r.kv.Delete(ctx, r.Name); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("fleet: forgetting %s's state: %w", r.Name, err)
	}
	return nil
}

// Close closes the connection.
func (r *Resume) Close() { r.nc.Close() }

// Options are the stream's options the monitor asked for.
func (r *Resume) Options() StreamOptions { return r.opt }
