package am

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/mpgo/mpgo/comm"
)

// Future is the outcome of a [Handler.Call]: the handler's response and
// error once its reply has come back. Wait, WaitContext and Done may be
// called any number of times, from any goroutine of the caller's rank;
// Wait and WaitContext return the same outcome each time.
//
// Underneath, a Future is a receive posted on the endpoint's reply
// communicator when the Call was made, so a rank that waits on one is
// parked in mpgo like any other: the deadlock detector sees it, and an
// abort or a deadlock fails it.
type Future[T any] struct {
	ep    *Endpoint
	r     *comm.Request // the reply's receive; nil when the call failed before it was sent
	name  string        // the handler's, for errors
	dst   int
	src   comm.Source // the request, when it went by reference: the reply comes back as it
	codec *codec[T]   // the response's, for a reply in bytes
	quiet atomic.Bool // a dispatcher goroutine waits on r quietly (one may)

	// The outcome. By reference, the handler's runner sets val and err
	// before it sends the reply; in bytes, Take keeps raw, which the first
	// result decodes. Either way they are read only once r completed.
	val  T
	err  error
	raw  []byte
	once sync.Once
}

// Wait blocks until the reply has come back and returns the handler's
// response and error: a [*HandlerError] (matching [ErrRemote],
// [ErrPanic] or [ErrNoHandler]) when the handler failed or was not found,
// or an error of the call itself (a bad rank, a closed endpoint, an
// aborted or deadlocked run: package comm's sentinels).
//
// A handler that waits here lets its endpoint's dispatcher run the next
// message meanwhile (see the package documentation), so handlers may call
// handlers, their own rank's included.
func (f *Future[T]) Wait() (T, error) {
	if f.r == nil {
		return f.val, f.err
	}
	f.ep.yieldFor(f.r, callerYields)
	if _, err := f.ep.await(f.r, &f.quiet); err != nil {
		return f.fail(err)
	}
	return f.result()
}

// WaitContext is Wait that gives up when ctx is done first: it then
// returns ctx.Err() and leaves the Future as it was, to be waited for
// again. A handler waiting here lets the dispatcher go on as Wait does.
func (f *Future[T]) WaitContext(ctx context.Context) (T, error) {
	if f.r == nil {
		return f.val, f.err
	}
	if _, ok, err := f.r.Test(); ok {
		if err != nil {
			return f.fail(err)
		}
		return f.result()
	}
	if err := f.ep.awaitContext(ctx, f.r); err != nil {
		var zero T
		return zero, err
	}
	return f.Wait()
}

// Done returns a channel that is closed once the reply has come back (or
// the call failed), for use in a select statement; Wait then returns at
// once.
func (f *Future[T]) Done() <-chan struct{} {
	if f.r == nil {
		return closed
	}
	return f.r.Done()
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// failed makes f a Future that failed before its request was sent.
func (f *Future[T]) failed(err error) *Future[T] {
	f.r, f.err = nil, err
	return f
}

// fail returns the failure of the reply's receive, err (an abort, a
// deadlock), naming the call.
func (f *Future[T]) fail(err error) (T, error) {
	var zero T
	return zero, fmt.Errorf("am: call of %q on rank %d: %w", f.name, f.dst, err)
}

// result returns the outcome of a reply that has come back.
func (f *Future[T]) result() (T, error) {
	f.once.Do(f.decode)
	return f.val, f.err
}

// decode decodes a reply that came in bytes.
func (f *Future[T]) decode() {
	if f.raw == nil {
		return // by reference: val and err are set
	}
	data := f.raw
	f.raw = nil
	switch {
	case len(data) == 0 || data[0] >= nStatus:
		f.err = fmt.Errorf("am: reply of %q from rank %d: %d bytes: %w", f.name, f.dst, len(data), comm.ErrType)
	case data[0] != statusOK:
		f.err = &HandlerError{Rank: f.dst, Handler: f.name, Msg: string(data[1:]), status: data[0]}
	default:
		if err := f.codec.decode(data[1:], &f.val); err != nil {
			f.err = fmt.Errorf("am: reply of %q from rank %d: %w", f.name, f.dst, err)
		}
	}
}

// replySink is a Future as its reply's receive sees it: a [comm.Sink]
// (the same memory, so that Future's own methods stay Wait, WaitContext
// and Done).
type replySink[T any] Future[T]

func (k *replySink[T]) Cap() int { return math.MaxInt }

// Take receives the reply: by reference, the request itself coming back
// (its runner set val and err already), or bytes, kept for decode.
func (k *replySink[T]) Take(data []byte, from comm.Remote, n int) error {
	f := (*Future[T])(k)
	if from != nil && f.src != nil && from == comm.Remote(f.src) {
		return nil
	}
	if from != nil {
		f.raw = make([]byte, n)
		return from.Pull(f.raw)
	}
	f.raw = append(make([]byte, 0, len(data)), data...)
	return nil
}
