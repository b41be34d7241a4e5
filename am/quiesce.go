package am

import (
	"encoding/binary"
	"fmt"

	"github.com/mpgo/mpgo/comm"
)

// Quiesce blocks until every request posted or called before it on every
// rank, and every request their handlers sent in turn, has been handled,
// and returns the failures of the Posts this rank made that were reported
// back meanwhile (each a [*HandlerError], joined), or the run's failure.
// Every member calls it; a handler must not (it fails with
// [ErrInHandler]). Requests of this epoch (sent before their sender
// completed this Quiesce) for a name their destination has not registered
// fail with [ErrNoHandler] (see [Register]).
// Requests sent concurrently by other goroutines of a rank may or may not
// be waited for.
//
// It detects termination by counting, as Mattern's four-counter method
// does: each rank counts the requests it sent and those it handled, and
// the ranks sum both counts (an Allreduce) round after round. Once the
// handled total of one round equals the sent total of the next, every
// request sent before the second round began had been handled at a
// moment between the two: none was in flight or running, so none can
// cause another. Replies are not counted: they run no handler.
func (ep *Endpoint) Quiesce() error {
	if ep.inHandler() {
		return fmt.Errorf("am: quiesce: %w", ErrInHandler)
	}
	if ep.closed.Load() {
		return fmt.Errorf("am: quiesce: %w", comm.ErrClosed)
	}
	return ep.quiesce(false)
}

// quiesce is Quiesce, and Close's with final: requests for names not
// registered here fail from now on (see failsUnknown), those of this
// epoch (all, with final) for the Quiesce.
func (ep *Endpoint) quiesce(final bool) error {
	ep.poke(func() {
		if final {
			ep.closingAll = true
		} else {
			ep.quiescing = int64(ep.quiesced.Load())
		}
		ep.recheck = true // the held ones too
	})
	defer func() {
		ep.quiesced.Add(1) // requests sent from now on are of the next epoch
		ep.mu.Lock()
		ep.quiescing = -1
		ep.mu.Unlock()
	}()
	counts, sums := make([]byte, 16), make([]byte, 16)
	handled := int64(-1) // the previous round's total
	for {
		binary.NativeEndian.PutUint64(counts, uint64(ep.sent.Load()))
		binary.NativeEndian.PutUint64(counts[8:], uint64(ep.handled.Load()))
		if err := ep.ac.Allreduce(counts, sums, comm.Int64, sumInt64s); err != nil {
			return fmt.Errorf("am: quiesce: %w", err)
		}
		if int64(binary.NativeEndian.Uint64(sums)) == handled {
			return ep.takeErrors()
		}
		handled = int64(binary.NativeEndian.Uint64(sums[8:]))
	}
}

// sumInt64s adds the int64s of in to those of inout (a comm.Op): the
// counts of quiesce, summed at comm's level because package typed's
// one-sided windows use this package, which therefore must not use typed.
func sumInt64s(inout, in []byte) {
	for i := 0; i+8 <= len(inout); i += 8 {
		v := binary.NativeEndian.Uint64(inout[i:]) + binary.NativeEndian.Uint64(in[i:])
		binary.NativeEndian.PutUint64(inout[i:], v)
	}
}
