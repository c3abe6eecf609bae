package session

import (
	"errors"
	"fmt"

	"github.com/tqmon/tqmon/resident/wire"
)

// Errors a session ends with (Recv returns them; Command wraps them).
var (
	ErrClosed          = errors.New("resident: session closed")
	ErrLeaseExpired    = errors.New("resident: session lease expired")
	ErrTooManySessions = fmt.Errorf("resident: more than %d sessions", MaxSessions)
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
