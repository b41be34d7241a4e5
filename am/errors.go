package am

import (
	"errors"
	"fmt"

	"github.com/mpgo/mpgo/comm"
)

// Sentinel errors; test for them with [errors.Is]. A handler's own failure
// reaches its caller as a [*HandlerError], which matches the sentinels
// that describe it. Errors of the layer below (a bad rank, an aborted or
// deadlocked run, a closed endpoint) wrap package comm's sentinels
// ([comm.ErrRank], [comm.ErrAborted], [comm.ErrDeadlock],
// [comm.ErrClosed], …).
var (
	// ErrNoHandler reports a request for a name its destination has not
	// registered (by the time it called Quiesce or Close: see [Register]).
	ErrNoHandler = errors.New("am: no handler of that name")
	// ErrRemote reports a handler that returned an error, panicked, or
	// could not take its request (of another type than it was registered
	// with).
	ErrRemote = errors.New("am: handler failed")
	// ErrPanic reports a handler that panicked: its error also matches
	// ErrRemote, and its message holds the panic's value and stack.
	ErrPanic = errors.New("am: handler panicked")
	// ErrInHandler reports a call that a handler must not make: the
	// collective [Endpoint.Quiesce] and [Endpoint.Close].
	ErrInHandler = errors.New("am: not allowed inside a handler")
)

// The outcomes a reply or a report carries (one byte on the wire).
const (
	statusOK         byte = iota
	statusError           // the handler returned an error
	statusPanic           // the handler panicked
	statusNoHandler       // no handler of that name at the destination
	statusBadRequest      // a request the handler could not take (type, encoding)
	nStatus
)

// HandlerError is the failure of a handler as its caller (a Call's
// Future) or its poster (Quiesce, for a Post) receives it: the rank that
// ran it, the handler's name and its error's message (a handler's error
// travels as text, the same in one process as between processes). It
// matches [ErrRemote] (and, after a panic, [ErrPanic]) or [ErrNoHandler];
// a request that could not be decoded also matches [comm.ErrType].
type HandlerError struct {
	Rank    int    // the rank the request went to, in the endpoint's communicator
	Handler string // the handler's name
	Msg     string // the handler's error message, or the panic's value and stack
	status  byte
}

func (e *HandlerError) Error() string {
	switch e.status {
	case statusNoHandler:
		return fmt.Sprintf("am: rank %d has no handler %q", e.Rank, e.Handler)
	case statusPanic:
		return fmt.Sprintf("am: handler %q on rank %d panicked: %s", e.Handler, e.Rank, e.Msg)
	default:
		return fmt.Sprintf("am: handler %q on rank %d: %s", e.Handler, e.Rank, e.Msg)
	}
}

// Is reports whether e matches target: [ErrRemote] for a handler that
// failed, [ErrPanic] for one that panicked, [ErrNoHandler] for a name the
// destination did not have, [comm.ErrType] for a request it could not
// decode.
func (e *HandlerError) Is(target error) bool {
	switch target {
	case ErrRemote:
		return e.status == statusError || e.status == statusPanic || e.status == statusBadRequest
	case ErrPanic:
		return e.status == statusPanic
	case ErrNoHandler:
		return e.status == statusNoHandler
	case comm.ErrType:
		return e.status == statusBadRequest
	}
	return false
}
