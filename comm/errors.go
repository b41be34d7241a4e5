package comm

import "errors"

// Sentinel errors. Every error mpgo returns wraps one of these; test for them
// with [errors.Is].
var (
	// ErrRank reports a rank outside [0, Size) (or AnySource where it is not
	// allowed).
	ErrRank = errors.New("comm: invalid rank")
	// ErrTag reports a negative tag, or AnyTag on a send.
	ErrTag = errors.New("comm: invalid tag")
	// ErrTruncate reports a message longer than the receive buffer. The
	// message is consumed; the next receive gets the next message.
	ErrTruncate = errors.New("comm: message truncated")
	// ErrType reports a message whose element type differs from the
	// receiver's (receiving as bytes is always allowed), or a value that
	// cannot be decoded into the receiver's variable. The message is
	// consumed.
	ErrType = errors.New("comm: element type mismatch")
	// ErrAborted is returned by every blocked or later operation once a rank
	// failed, panicked or the run's context was cancelled.
	ErrAborted = errors.New("comm: run aborted")
	// ErrDeadlock is returned by blocked operations when every live rank is
	// blocked in mpgo and none can make progress.
	ErrDeadlock = errors.New("comm: deadlock")
	// ErrClosed reports the use of a communicator after its run ended.
	ErrClosed = errors.New("comm: communicator closed")
	// ErrNotSupported reports an operation the backend does not provide.
	ErrNotSupported = errors.New("comm: not supported")
	// ErrCanceled is returned by Wait on a request that Cancel cancelled.
	ErrCanceled = errors.New("comm: request canceled")
	// ErrArg reports a bad argument other than a rank or a tag (a nil
	// pointer, a negative count, …).
	ErrArg = errors.New("comm: invalid argument")
)
