package comm

import (
	"context"
	"errors"
	"fmt"
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
	if r.e().Observer() != nil {
		seen(r.e())
	}
	return Status(st), err
}

// Test reports whether the request completed, without blocking; when it has,
// it returns the status and error as Wait would.
func (r *Request) Test() (Status, bool, error) {
	if l := reqLog(r.e()); l != nil {
		return r.testLogged(l)
	}
	st, ok, err := r.e().Test() // a nil r fails with ErrArg there
	return Status(st), ok, err
}

// Done returns a channel that is closed when the request completes, for use
// in a select statement. Call Wait or Test afterwards for the result.
func (r *Request) Done() <-chan struct{} { return r.e().UserDone() }

// Cancel cancels a receive that has not matched a message yet; Wait then
// returns an error wrapping [ErrCanceled]. Cancelling a receive that already
// matched (or completed) does nothing and returns nil: Wait reports the
// message as usual. Cancelling a send returns [ErrNotSupported] (MPI
// deprecated it; a standard send may already have been delivered), and so
// does cancelling a non-blocking collective (it runs on regardless).
func (r *Request) Cancel() error { return r.e().Cancel() } // a nil r fails with ErrArg there

// WaitContext is Wait that gives up when ctx is done first: it then
// returns ctx.Err() and leaves the request as it was, still in flight (as
// x/sync/semaphore's Acquire does), to be waited for, tested or cancelled
// later. A rank waiting here may leave by its context, so the deadlock
// detector does not take it for blocked meanwhile.
func (r *Request) WaitContext(ctx context.Context) (Status, error) {
	st, err := r.e().WaitContext(ctx) // a nil r fails with ErrArg there
	return Status(st), err
}

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
	if l := firstLog(rs); l != nil {
		return waitAnyLogged(l, rs)
	}
	i, st, err := engine.WaitAny(engineReqs(rs)...)
	return i, Status(st), err
}

// TestAll reports whether every request has completed, without blocking;
// when all have, it returns the first error among them (in argument
// order), as WaitAll would. Nil requests are skipped.
func TestAll(rs ...*Request) (bool, error) {
	if l := firstLog(rs); l != nil {
		return testAllLogged(l, rs)
	}
	for _, r := range rs {
		if r != nil && !r.e().Ready() {
			return false, nil
		}
	}
	return true, WaitAll(rs...)
}

// TestAny returns the index, status and error of a completed request
// (the first in argument order), without blocking; ok is false, and the
// index -1, when none has completed. Nil requests are skipped; with none
// left it fails with an error wrapping [ErrArg], as WaitAny does.
func TestAny(rs ...*Request) (i int, st Status, ok bool, err error) {
	if l := firstLog(rs); l != nil {
		return testAnyLogged(l, rs)
	}
	some := false
	for i, r := range rs {
		if r == nil {
			continue
		}
		some = true
		if st, ok, err := r.e().Test(); ok {
			return i, Status(st), true, err
		}
	}
	if !some {
		return -1, Status{}, false, fmt.Errorf("comm: TestAny of no requests: %w", ErrArg)
	}
	return -1, Status{}, false, nil
}

// WaitSome waits until at least one of the requests completes and returns
// the indices of all that have, in increasing order, with the first error
// among them; each one's status is its Wait's (which returns at once).
// Nil requests are skipped; with none left it fails with an error
// wrapping [ErrArg], as WaitAny does.
func WaitSome(rs ...*Request) ([]int, error) {
	if l := firstLog(rs); l != nil {
		return waitSomeLogged(l, rs)
	}
	if _, _, err := WaitAny(rs...); errors.Is(err, ErrArg) && !someRequest(rs) {
		return nil, fmt.Errorf("comm: WaitSome of no requests: %w", ErrArg)
	}
	return TestSome(rs...)
}

// TestSome returns the indices of the requests that have completed, in
// increasing order (none: an empty slice), with the first error among
// them, without blocking. Nil requests are skipped; with none left it
// fails with an error wrapping [ErrArg].
func TestSome(rs ...*Request) ([]int, error) {
	if !someRequest(rs) {
		return nil, fmt.Errorf("comm: TestSome of no requests: %w", ErrArg)
	}
	done := []int{}
	var first error
	for i, r := range rs {
		if r == nil {
			continue
		}
		if _, ok, err := r.e().Test(); ok {
			done = append(done, i)
			if err != nil && first == nil {
				first = err
			}
		}
	}
	return done, first
}

// someRequest reports whether rs holds a request that is not nil.
func someRequest(rs []*Request) bool {
	for _, r := range rs {
		if r != nil {
			return true
		}
	}
	return false
}

// engineReqs is rs as the engine's requests: a *Request is an
// *engine.Request, so the slice is the engine's as it is.
func engineReqs(rs []*Request) []*engine.Request {
	return unsafe.Slice((**engine.Request)(unsafe.Pointer(unsafe.SliceData(rs))), len(rs))
}
