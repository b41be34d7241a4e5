package comm

import (
	"fmt"
	"sync/atomic"
)

// The one-collective-at-a-time rule, enforced.
//
// A rank calls the collectives of a communicator one at a time: they
// share its collective context, its shared-memory table and its caches,
// and the members match them by order alone. Two goroutines of a rank
// that called collectives on one communicator at once used to meet the
// other ranks' calls in whatever order the scheduler chose, and often
// hang, unseen by the deadlock detector (the rank's own goroutine waits
// for them outside mpgo).
//
// Every collective call of a Comm (the blocking collectives, the value
// collectives, the start of a non-blocking one, the planning of a
// persistent one, the calls that make communicators or set algorithms)
// marks the Comm busy for its duration with one compare-and-swap, and
// clears the mark when it returns. A call that finds the mark set fails
// at once with ErrConcurrent, before it touches anything: the call in
// progress, and the other ranks' calls it meets, are not disturbed.
// Composite collectives (the value collectives, DistGraphCreate) hold the
// mark across their steps, which they run unmarked. An [Intercomm] has a
// mark of its own, for its collectives and Merge.

// enter marks c busy with the collective what, or fails with
// ErrConcurrent when a collective call of this rank is in progress on c.
// A nil c is let through: the call's own checks report it.
func (c *Comm) enter(what string) error {
	if c == nil {
		return nil
	}
	if err := mark(c.busy, what, c, c.rank); err != nil {
		return err
	}
	if c.ct != nil {
		c.ct.enter(what)
	}
	return nil
}

// mark sets busy, the mark of communicator on, for the collective what of
// rank, or fails with ErrConcurrent when it is set already.
func mark(busy *atomic.Bool, what string, on fmt.Stringer, rank int) error {
	if busy == nil || busy.CompareAndSwap(false, true) {
		return nil
	}
	return busyErr(what, on, rank)
}

// busyErr is mark's error (not inlined: see collErr).
//
//go:noinline
func busyErr(what string, on fmt.Stringer, rank int) error {
	return fmt.Errorf("comm: %s on %s: another collective call of rank %d is in progress on it: %w", what, on, rank, ErrConcurrent)
}

// leave clears the mark enter set.
func (c *Comm) leave() {
	if c != nil && c.ct != nil {
		c.ct.leave(c.ctx | 1)
	}
	if c != nil && c.busy != nil {
		c.busy.Store(false)
	}
}

// begin checks that c is usable for the collective what and marks it
// busy (enter): the caller leaves once done.
func (c *Comm) begin(what string) error {
	if err := c.collUsable(what); err != nil {
		return err
	}
	return c.enter(what)
}

// guarded runs f, the collective what of c, marked busy as enter marks
// it: for the collectives that composite ones run as steps, whose public
// form is guarded and whose steps are not.
func (c *Comm) guarded(what string, f func() error) error {
	if err := c.enter(what); err != nil {
		return err
	}
	defer c.leave()
	return f()
}

// enter marks ic busy with the collective what (see Comm.enter).
func (ic *Intercomm) enter(what string) error { return mark(&ic.busy, what, ic, ic.local.rank) }

// leave clears the mark enter set.
func (ic *Intercomm) leave() { ic.busy.Store(false) }
