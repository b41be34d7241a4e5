package comm

import "fmt"

// Helpers: goroutines that work for their rank beside its own goroutine.
//
// [Comm.Go] runs a function on such a goroutine and counts it as running
// for the deadlock detector while it runs, so that a rank whose helper
// still computes is never taken for a blocked one. A helper that is
// long-lived and spends most of its life waiting for work (an active
// message dispatcher, package am) must not keep its rank counted as
// running while it waits, or a real deadlock would stay invisible:
// WaitQuiet is its wait.

// WaitQuiet waits for r on a helper goroutine (one started by [Comm.Go],
// while its func runs), and returns r's outcome as Wait does. While it
// sleeps the goroutine counts neither as running nor as its rank's parked
// goroutine: the deadlock detector judges the rank by its own goroutine
// alone, as it does a rank whose non-blocking collectives wait. The
// completion of r counts the helper back in before it wakes it.
//
// Only a helper of r's rank may call it, and only one goroutine at a time
// may wait on r this way; any other goroutine waits with [Request.Wait]
// (a caller that is not counted as running would make its rank look
// blocked while it runs, and the detector could report a deadlock that is
// not one).
func (r *Request) WaitQuiet() (Status, error) {
	if r == nil {
		return Status{}, fmt.Errorf("comm: wait on nil request: %w", ErrArg)
	}
	st, err := r.e().WaitQuiet()
	return Status(st), err
}
