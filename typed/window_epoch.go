package typed

import (
	"fmt"
	"sync"

	"github.com/mpgo/mpgo/comm"
)

// epochs is one rank's view of its epochs on a window (MPI 4.1 §12.5):
// which targets it may access now, and which exposure epoch it has open.
// The rules are checked at the origin, before any memory is touched, so a
// call outside them fails with comm.ErrEpoch and changes nothing.
type epochs struct {
	mu      sync.Mutex       // guards everything below
	closed  bool             // Free has begun or finished
	fence   bool             // a fence epoch is open (a Fence has been called)
	all     lockMode         // LockAll: lockNone, lockPending (acquiring) or lockShared
	locks   map[int]lockMode // targets this rank has locked (or is locking)
	started map[int]bool     // targets of the open Start (access group); nil when none
	posted  []int            // origins of the open Post (exposure group); nil when none
}

// lockMode is an origin's lock on one target.
type lockMode uint8

const (
	lockNone      lockMode = iota
	lockPending            // Lock called, not granted yet
	lockShared             // held, shared
	lockExclusive          // held, exclusive
)

// access checks that the rank may access target now: an open fence
// epoch, a lock on it held (or LockAll), or target in the open Start's
// group.
func (e *epochs) access(target int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return comm.ErrClosed
	}
	if e.fence || e.all == lockShared || e.started[target] {
		return nil
	}
	if m := e.locks[target]; m == lockShared || m == lockExclusive {
		return nil
	}
	return fmt.Errorf("no access epoch to rank %d open (no Fence, Lock, LockAll or Start covers it): %w", target, comm.ErrEpoch)
}

// passive checks that a passive-target epoch to target is open (Flush);
// target < 0 asks for any (FlushAll).
func (e *epochs) passive(target int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return comm.ErrClosed
	}
	if e.all == lockShared {
		return nil
	}
	if target < 0 {
		for _, m := range e.locks {
			if m == lockShared || m == lockExclusive {
				return nil
			}
		}
		return fmt.Errorf("flush with no Lock or LockAll open: %w", comm.ErrEpoch)
	}
	if m := e.locks[target]; m == lockShared || m == lockExclusive {
		return nil
	}
	return fmt.Errorf("flush of rank %d with no Lock or LockAll of it open: %w", target, comm.ErrEpoch)
}

// beginLock marks target as being locked; it fails when this rank already
// holds or is acquiring a lock on it, or holds LockAll.
func (e *epochs) beginLock(target int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return comm.ErrClosed
	}
	if e.all != lockNone {
		return fmt.Errorf("Lock of rank %d inside LockAll: %w", target, comm.ErrEpoch)
	}
	if e.locks[target] != lockNone {
		return fmt.Errorf("second Lock of rank %d: %w", target, comm.ErrEpoch)
	}
	if e.locks == nil {
		e.locks = make(map[int]lockMode)
	}
	e.locks[target] = lockPending
	return nil
}

// endLock records the outcome of acquiring a lock on target: held in mode
// m, or (m == lockNone) not acquired.
func (e *epochs) endLock(target int, m lockMode) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m == lockNone {
		delete(e.locks, target)
		return
	}
	e.locks[target] = m
}

// unlock checks that this rank holds a lock on target, and forgets it.
func (e *epochs) unlock(target int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return comm.ErrClosed
	}
	if m := e.locks[target]; m != lockShared && m != lockExclusive {
		return fmt.Errorf("Unlock of rank %d, which this rank has not locked: %w", target, comm.ErrEpoch)
	}
	delete(e.locks, target)
	return nil
}

// beginLockAll marks LockAll as being acquired; it fails when this rank
// holds or is acquiring any lock.
func (e *epochs) beginLockAll() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return comm.ErrClosed
	}
	if e.all != lockNone || len(e.locks) > 0 {
		return fmt.Errorf("LockAll with a lock already open: %w", comm.ErrEpoch)
	}
	e.all = lockPending
	return nil
}

// endLockAll records the outcome of LockAll: held or not.
func (e *epochs) endLockAll(held bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = lockNone
	if held {
		e.all = lockShared
	}
}

// unlockAll checks that LockAll is held, and forgets it.
func (e *epochs) unlockAll() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return comm.ErrClosed
	}
	if e.all != lockShared {
		return fmt.Errorf("UnlockAll without LockAll: %w", comm.ErrEpoch)
	}
	e.all = lockNone
	return nil
}

// quiet checks that no lock and no generalized active-target epoch is
// open, as a Fence requires.
func (e *epochs) quiet(op string) error {
	if e.closed {
		return comm.ErrClosed
	}
	switch {
	case e.all != lockNone || len(e.locks) > 0:
		return fmt.Errorf("%s with a Lock or LockAll open: %w", op, comm.ErrEpoch)
	case e.started != nil:
		return fmt.Errorf("%s with a Start not Completed: %w", op, comm.ErrEpoch)
	case e.posted != nil:
		return fmt.Errorf("%s with a Post not Waited for: %w", op, comm.ErrEpoch)
	}
	return nil
}

// fenced checks that a Fence may be called, and opens the fence epoch.
func (e *epochs) fenced() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.quiet("Fence"); err != nil {
		return err
	}
	e.fence = true
	return nil
}

// closing checks that the window may be freed and marks it closed.
func (e *epochs) closing() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.quiet("Free"); err != nil {
		return err
	}
	e.closed = true
	return nil
}

// reopen undoes closing, for a Free that failed.
func (e *epochs) reopen() {
	e.mu.Lock()
	e.closed = false
	e.mu.Unlock()
}

// start opens an access epoch to targets (Start).
func (e *epochs) start(targets []int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return comm.ErrClosed
	}
	if e.started != nil {
		return fmt.Errorf("Start with a Start not Completed: %w", comm.ErrEpoch)
	}
	e.started = make(map[int]bool, len(targets))
	for _, t := range targets {
		e.started[t] = true
	}
	return nil
}

// complete closes the access epoch of Start and returns its targets.
func (e *epochs) complete() ([]int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, comm.ErrClosed
	}
	if e.started == nil {
		return nil, fmt.Errorf("Complete without Start: %w", comm.ErrEpoch)
	}
	ts := make([]int, 0, len(e.started))
	for t := range e.started {
		ts = append(ts, t)
	}
	e.started = nil
	return ts, nil
}

// post opens an exposure epoch to origins (Post).
func (e *epochs) post(origins []int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return comm.ErrClosed
	}
	if e.posted != nil {
		return fmt.Errorf("Post with a Post not Waited for: %w", comm.ErrEpoch)
	}
	e.posted = append([]int{}, origins...)
	return nil
}

// wait closes the exposure epoch of Post and returns its origins.
func (e *epochs) wait() ([]int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, comm.ErrClosed
	}
	if e.posted == nil {
		return nil, fmt.Errorf("Wait without Post: %w", comm.ErrEpoch)
	}
	os := e.posted
	e.posted = nil
	return os, nil
}
