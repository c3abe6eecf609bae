package session

import (
	"errors"
	"fmt"
	"io"

	"github.com/tqmon/tqmon/resident/wire"
)

// Errors a session ends with (Recv returns them; Command wraps them).
// ErrClosed is the normal end — the session or the resident closed, so
// everything it was to report has been reported — and is io.EOF to
// errors.Is (a transport ends the stream cleanly); every other error
// means the session was lost and what followed went unobserved.
var (
	ErrClosed          error = closedError{}
	ErrLeaseExpired          = errors.New("resident: session lease expired")
	ErrTooManySessions       = fmt.Errorf("resident: more than %d sessions", MaxSessions)
)

// CommandError is a command the resident refused: which command of the
// session it was (1-based), its kind, the field at fault and why. A
// refused command changes nothing.
type CommandError struct {
	Seq   uint64
	Kind  wire.CommandKind
	Field string
	Msg   string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("resident: command %d (%s): %s: %s", e.Seq, e.Kind, e.Field, e.Msg)
}

type closedError struct{}

func (closedError) Error() string        { return "resident: session closed" }
func (closedError) Is(target error) bool { return target == io.EOF }
