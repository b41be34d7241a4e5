package comm

import (
	"unsafe"

	"github.com/mpgo/mpgo/comm/internal/engine"
)

// Request is a non-blocking operation in flight: a send, a receive or (inside
// mpgo) a blocked probe. Its methods are safe for concurrent use; Wait, Test
// and Done may be called any number of times and report the same result.
//
// A Request is completed exactly once, by whoever removes it from the
// matching queues (under that queue's lock): a matching peer, Cancel, an
// abort or the deadlock detector.
type Request engine.Request

// e is r as the engine's request (the same memory).
func (r *Request) e() *engine.Request { return (*engine.Request)(r) }

// user is the engine's request r as the user's.
func user(r *engine.Request) *Request { return (*Request)(r) }

// Wait blocks until the request completes and returns its status. For a
// receive, Count is in elements of the receive's type.
func (r *Request) Wait() (Status, error) {
	st, err := r.e().Wait() // a nil r fails with ErrArg there
	return Status(st), err
}

// Test reports whether the request completed, without blocking; when it has,
// it returns the status and error as Wait would.
func (r *Request) Test() (Status, bool, error) {
	st, ok, err := r.e().Test() // a nil r fails with ErrArg there
	return Status(st), ok, err
}

// Done returns a channel that is closed when the request completes, for use
// in a select statement. Call Wait or Test afterwards for the result.
func (r *Request) Done() <-chan struct{} { return r.e().Done() }

// Cancel cancels a receive that has not matched a message yet; Wait then
// returns an error wrapping [ErrCanceled]. Cancelling a receive that already
// matched (or completed) does nothing and returns nil: Wait reports the
// message as usual. Cancelling a send returns [ErrNotSupported] (MPI
// deprecated it; a standard send may already have been delivered).
func (r *Request) Cancel() error { return r.e().Cancel() } // a nil r fails with ErrArg there

// WaitAll waits for every request and returns the first error among them
// (in argument order), after all have completed. Nil requests are skipped.
func WaitAll(rs ...*Request) error {
	var first error
	for _, r := range rs {
		if r == nil {
			continue
		}
		if _, err := r.Wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// WaitAny waits until one of the requests completes and returns its index,
// status and error. Nil requests are skipped; with none left it returns -1
// and an error wrapping [ErrArg].
func WaitAny(rs ...*Request) (int, Status, error) {
	// A *Request is an *engine.Request: the slice is the engine's as it is.
	i, st, err := engine.WaitAny(unsafe.Slice((**engine.Request)(unsafe.Pointer(unsafe.SliceData(rs))), len(rs))...)
	return i, Status(st), err
}
