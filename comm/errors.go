package comm

import (
	"errors"
	"fmt"

	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/comm/internal/engine"
)

// Sentinel errors. Every error mpgo returns wraps one of these; test for them
// with [errors.Is]. Those a backend reports too are package device's values
// (comm.ErrClosed is device.ErrClosed), as os.ErrNotExist is
// fs.ErrNotExist.
var (
	// ErrRank reports a rank outside [0, Size) (or AnySource where it is not
	// allowed).
	ErrRank = device.ErrRank
	// ErrTag reports a negative tag, or AnyTag on a send.
	ErrTag = errors.New("comm: invalid tag")
	// ErrTruncate reports a message longer than the receive buffer. The
	// message is consumed; the next receive gets the next message.
	ErrTruncate = engine.ErrTruncate
	// ErrType reports a message whose element type differs from the
	// receiver's (receiving as bytes is always allowed), or a value that
	// cannot be decoded into the receiver's variable (the message is
	// consumed), or a Go type that cannot be an element type ([TypeOf]).
	ErrType = engine.ErrType
	// ErrAborted is returned by every blocked or later operation once a rank
	// failed, panicked or the run's context was cancelled.
	ErrAborted = device.ErrAborted
	// ErrDeadlock is returned by blocked operations when every live rank is
	// blocked in mpgo and none can make progress.
	ErrDeadlock = engine.ErrDeadlock
	// ErrClosed reports the use of a communicator after its run ended.
	ErrClosed = device.ErrClosed
	// ErrNotSupported reports an operation the backend does not provide.
	ErrNotSupported = device.ErrNotSupported
	// ErrCanceled is returned by Wait on a request that Cancel cancelled.
	ErrCanceled = engine.ErrCanceled
	// ErrArg reports a bad argument other than a rank or a tag (a nil
	// pointer, a negative count, …).
	ErrArg = device.ErrArg
	// ErrPeerLost reports that a process of the job is gone. When it
	// broke off (it died, its host did, its connection failed, or it sent
	// a malformed message) the whole job aborts: every pending and later
	// operation fails with an error wrapping both ErrPeerLost and
	// ErrAborted. When it finished normally, a receive or probe that was
	// still waiting for one of its ranks, and a send to one, fail with
	// ErrPeerLost alone.
	ErrPeerLost = device.ErrPeerLost
	// ErrConcurrent reports a collective call on a communicator while
	// another collective call of the same rank is in progress on it, from
	// another goroutine (see [Comm]). It wraps ErrArg.
	ErrConcurrent = fmt.Errorf("comm: concurrent collective calls on one communicator: %w", ErrArg)
	// ErrEpoch reports a one-sided operation or synchronisation call that
	// the window's epochs do not allow (MPI 4.1 §12.5): a Put, Get or
	// accumulate outside any access epoch to its target, an Unlock without
	// a Lock, a second Lock of one target, a Fence inside a lock epoch, a
	// window freed with an epoch open. It wraps ErrArg.
	ErrEpoch = fmt.Errorf("comm: RMA call outside its epoch: %w", ErrArg)
)
