package comm

import "fmt"

// Helpers: goroutines that work for their rank beside its own goroutine.
//
// [Comm.Go] runs a function on such a goroutine and counts it as running
// for the deadlock detector while it runs, so that a rank whose helper
// still computes is never taken for a blocked one. The detector takes a
// rank for blocked when its goroutines parked in mpgo (its own and its
// helpers, each seen apart) are at least its own goroutine and its
// running helpers: a helper that blocks in an ordinary call (Recv, Wait)
// is parked like the rank's goroutine, and the report lists both. A
// helper that is long-lived and spends most of its life waiting for work
// (an active message dispatcher, package am) waits with WaitQuiet, which
// takes it out of the count while it sleeps. Goroutines that the program
// starts itself with go, not through Comm.Go, are invisible to the
// detector: while one of them computes and will send, its rank's own
// goroutine parked on a receive looks blocked, and a deadlock can be
// reported that is not one. Start them with Comm.Go.

// WaitQuiet waits for r on a helper goroutine (one started by [Comm.Go],
// while its func runs), and returns r's outcome as Wait does. While it
// sleeps the goroutine counts neither as running nor as parked: the
// deadlock detector judges the rank by its other goroutines, as it does
// a rank whose non-blocking collectives wait. The completion of r counts
// the helper back in before it wakes it.
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
