package typed

import (
	"fmt"
	"sync"

	"github.com/mpgo/mpgo/comm"
)

// Passive-target locks (MPI_Win_lock, MPI_Win_unlock): a lock manager per
// target part, which origins acquire and release themselves. The target
// takes no part: an origin that finds the lock free takes it under the
// manager's mutex; one that must wait queues itself and receives a grant,
// a zero-length message on the window's communicator, from the origin
// whose release made room. Waiting in a receive, it is seen by the
// deadlock detector and woken by an abort like any other wait in mpgo.

// lockManager is the lock of one target's part of a window.
type lockManager struct {
	mu      sync.Mutex   // guards holders and queue
	holders int          // origins holding it shared; -1 when held exclusive
	queue   []lockWaiter // origins waiting, first come first served
}

// lockWaiter is an origin waiting for a lock.
type lockWaiter struct {
	origin    int
	exclusive bool
}

// acquire takes the lock for origin if it is free for it and nobody waits
// before it (true), or queues origin for a grant (false).
func (m *lockManager) acquire(origin int, exclusive bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.queue) == 0 {
		if exclusive && m.holders == 0 {
			m.holders = -1
			return true
		}
		if !exclusive && m.holders >= 0 {
			m.holders++
			return true
		}
	}
	m.queue = append(m.queue, lockWaiter{origin, exclusive})
	return false
}

// release gives one hold back and grants the lock to the waiters that may
// now have it: the first, and if it is shared, every shared waiter after
// it up to an exclusive one. It returns their ranks, to which the caller
// sends grants.
func (m *lockManager) release(wake []int) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.holders < 0 {
		m.holders = 0
	} else {
		m.holders--
	}
	for len(m.queue) > 0 {
		w := m.queue[0]
		switch {
		case w.exclusive && m.holders == 0:
			m.holders = -1
		case !w.exclusive && m.holders >= 0:
			m.holders++
		default:
			return wake
		}
		wake = append(wake, w.origin)
		m.queue = m.queue[1:]
		if w.exclusive {
			break
		}
	}
	if len(m.queue) == 0 {
		m.queue = nil
	}
	return wake
}

// Lock opens a passive-target access epoch to target (MPI_Win_lock):
// exclusive excludes every other origin's lock on target, shared excludes
// exclusive ones. It returns once the lock is held; the target need not
// make any call. Locking a target this rank already locks, or inside
// LockAll, fails with [comm.ErrEpoch].
func (w *Window[T]) Lock(target int, exclusive bool) error {
	if err := w.checkRank("Lock", target); err != nil {
		return err
	}
	if err := w.ep.beginLock(target); err != nil {
		return fmt.Errorf("typed: Window.Lock: %w", err)
	}
	if err := w.acquire(target, exclusive); err != nil {
		w.ep.endLock(target, lockNone)
		return fmt.Errorf("typed: Window.Lock of rank %d: %w", target, err)
	}
	m := lockShared
	if exclusive {
		m = lockExclusive
	}
	w.ep.endLock(target, m)
	w.edge()
	return nil
}

// acquire takes target's lock, waiting for a grant if need be.
func (w *Window[T]) acquire(target int, exclusive bool) error {
	if w.rm != nil {
		return w.remoteAcquire(target, exclusive)
	}
	if w.sh.targets[target].lock.acquire(w.rank, exclusive) {
		return nil
	}
	_, err := w.wc.Recv(nil, comm.Byte, comm.AnySource, tagWinGrant+target)
	return err
}

// release completes this rank's operations to target, gives target's
// lock back and sends the grants that makes.
func (w *Window[T]) release(target int) error {
	if w.rm != nil {
		return w.remoteRelease(target)
	}
	return w.grant(target)
}

// Unlock ends the passive-target epoch to target that [Window.Lock]
// opened (MPI_Win_unlock): every operation of the epoch is complete at the
// target and at the origin, and visible to whoever locks target next. An
// Unlock without a Lock fails with [comm.ErrEpoch].
func (w *Window[T]) Unlock(target int) error {
	w.edge()
	if err := w.checkRank("Unlock", target); err != nil {
		return err
	}
	if err := w.ep.unlock(target); err != nil {
		return fmt.Errorf("typed: Window.Unlock: %w", err)
	}
	if err := w.release(target); err != nil {
		return fmt.Errorf("typed: Window.Unlock of rank %d: %w", target, err)
	}
	return nil
}

// LockAll opens a shared passive-target access epoch to every rank
// (MPI_Win_lock_all). It fails with [comm.ErrEpoch] when this rank holds
// a lock already.
func (w *Window[T]) LockAll() error {
	if err := w.ep.beginLockAll(); err != nil {
		return fmt.Errorf("typed: Window.LockAll: %w", err)
	}
	// In rank order, so that LockAlls never wait on each other in a cycle.
	for r := range w.n {
		if err := w.acquire(r, false); err != nil {
			for q := range r {
				_ = w.release(q)
			}
			w.ep.endLockAll(false)
			return fmt.Errorf("typed: Window.LockAll: %w", err)
		}
	}
	w.ep.endLockAll(true)
	w.edge()
	return nil
}

// UnlockAll ends the epoch of [Window.LockAll] (MPI_Win_unlock_all).
func (w *Window[T]) UnlockAll() error {
	w.edge()
	if err := w.ep.unlockAll(); err != nil {
		return fmt.Errorf("typed: Window.UnlockAll: %w", err)
	}
	for r := range w.n {
		if err := w.release(r); err != nil {
			return fmt.Errorf("typed: Window.UnlockAll: %w", err)
		}
	}
	return nil
}

// Flush completes, at the target and at the origin, every operation this
// rank issued to target in the current passive-target epoch
// (MPI_Win_flush); the epoch stays open. It fails with [comm.ErrEpoch]
// outside a Lock of target or a LockAll.
func (w *Window[T]) Flush(target int) error {
	return w.flush("Flush", target)
}

// FlushAll is [Window.Flush] of every target (MPI_Win_flush_all).
func (w *Window[T]) FlushAll() error { return w.flush("FlushAll", -1) }

// FlushLocal completes this rank's operations to target locally
// (MPI_Win_flush_local): their origin buffers may be reused.
func (w *Window[T]) FlushLocal(target int) error {
	return w.flush("FlushLocal", target)
}

// FlushLocalAll is [Window.FlushLocal] of every target
// (MPI_Win_flush_local_all).
func (w *Window[T]) FlushLocalAll() error { return w.flush("FlushLocalAll", -1) }

// flush checks the epoch of a flush of target (< 0: all) and waits for
// the operations issued to it. Operations to a part in this process are
// complete when they return; across processes, a local flush has nothing
// to wait for either: the origin's data was copied when it was issued.
func (w *Window[T]) flush(op string, target int) error {
	if target >= 0 {
		if err := w.checkRank(op, target); err != nil {
			return err
		}
	}
	if err := w.ep.passive(target); err != nil {
		return fmt.Errorf("typed: Window.%s: %w", op, err)
	}
	if w.rm != nil && (op == "Flush" || op == "FlushAll") {
		if err := w.rm.flush(target); err != nil {
			return fmt.Errorf("typed: Window.%s: %w", op, err)
		}
	}
	w.edge()
	return nil
}

// Fence ends the current fence epoch and opens the next (MPI_Win_fence):
// collective, it returns once every rank called it, and every operation
// issued before it, by any rank, is complete and visible to every rank
// after it. The first Fence opens the first epoch. A Fence while this rank
// holds a lock or has a Start or Post open fails with [comm.ErrEpoch].
func (w *Window[T]) Fence() error {
	w.edge()
	defer w.edge()
	if err := w.ep.fenced(); err != nil {
		return fmt.Errorf("typed: Window.Fence: %w", err)
	}
	if w.rm != nil {
		if err := w.rm.flush(-1); err != nil {
			return fmt.Errorf("typed: Window.Fence: %w", err)
		}
	}
	if err := w.wc.Barrier(); err != nil {
		return fmt.Errorf("typed: Window.Fence: %w", err)
	}
	return nil
}

// checkRank checks that r is a rank of the window.
func (w *Window[T]) checkRank(op string, r int) error {
	if r < 0 || r >= w.n {
		return fmt.Errorf("typed: Window.%s of rank %d in a window of %d ranks: %w", op, r, w.n, comm.ErrRank)
	}
	return nil
}
