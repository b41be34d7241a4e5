package typed

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/mpgo/mpgo/comm"
)

// epochs is one rank's view of its epochs on a window (MPI 4.1 §12.5):
// which targets it may access now, and which exposure epoch it has open.
// The rules are checked at the origin, before any memory is touched, so a
// call outside them fails with comm.ErrEpoch and changes nothing.
//
// Every operation checks its epoch, and must not pay a lock for it: the
// state is an immutable epochView, read with one atomic load; the calls
// that open and close epochs (rarer by far) make a new view under mu and
// publish it.
type epochs struct {
	mu sync.Mutex                // serialises changes of the view
	v  atomic.Pointer[epochView] // the current view; nil: nothing open yet
}

// epochView is the state of a rank's epochs at one moment. Published
// views and their maps and slices are never modified.
type epochView struct {
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

// view returns the current state.
func (e *epochs) view() *epochView {
	if v := e.v.Load(); v != nil {
		return v
	}
	return &epochView{}
}

// change applies f to a copy of the current view and publishes it, unless
// f fails. f must copy a map or slice before it changes it.
func (e *epochs) change(f func(v *epochView) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	nv := *e.view()
	if err := f(&nv); err != nil {
		return err
	}
	e.v.Store(&nv)
	return nil
}

// withLock returns a copy of m where target's mode is mode (lockNone:
// absent).
func withLock(m map[int]lockMode, target int, mode lockMode) map[int]lockMode {
	m = maps.Clone(m)
	if mode == lockNone {
		delete(m, target)
		return m
	}
	if m == nil {
		m = make(map[int]lockMode, 1)
	}
	m[target] = mode
	return m
}

// held reports whether m holds a granted lock on target.
func held(m map[int]lockMode, target int) bool {
	mode := m[target]
	return mode == lockShared || mode == lockExclusive
}

// access checks that the rank may access target now: an open fence
// epoch, a lock on it held (or LockAll), or target in the open Start's
// group.
func (e *epochs) access(target int) error {
	v := e.view()
	switch {
	case v.closed:
		return comm.ErrClosed
	case v.fence || v.all == lockShared || v.started[target] || held(v.locks, target):
		return nil
	}
	return fmt.Errorf("no access epoch to rank %d open (no Fence, Lock, LockAll or Start covers it): %w", target, comm.ErrEpoch)
}

// passive checks that a passive-target epoch to target is open (Flush);
// target < 0 asks for any (FlushAll).
func (e *epochs) passive(target int) error {
	v := e.view()
	switch {
	case v.closed:
		return comm.ErrClosed
	case v.all == lockShared:
		return nil
	case target >= 0 && held(v.locks, target):
		return nil
	case target >= 0:
		return fmt.Errorf("flush of rank %d with no Lock or LockAll of it open: %w", target, comm.ErrEpoch)
	}
	for t := range v.locks {
		if held(v.locks, t) {
			return nil
		}
	}
	return fmt.Errorf("flush with no Lock or LockAll open: %w", comm.ErrEpoch)
}

// beginLock marks target as being locked; it fails when this rank already
// holds or is acquiring a lock on it, or holds LockAll.
func (e *epochs) beginLock(target int) error {
	return e.change(func(v *epochView) error {
		switch {
		case v.closed:
			return comm.ErrClosed
		case v.all != lockNone:
			return fmt.Errorf("Lock of rank %d inside LockAll: %w", target, comm.ErrEpoch)
		case v.locks[target] != lockNone:
			return fmt.Errorf("second Lock of rank %d: %w", target, comm.ErrEpoch)
		}
		v.locks = withLock(v.locks, target, lockPending)
		return nil
	})
}

// endLock records the outcome of acquiring a lock on target: held in mode
// m, or (m == lockNone) not acquired.
func (e *epochs) endLock(target int, m lockMode) {
	_ = e.change(func(v *epochView) error {
		v.locks = withLock(v.locks, target, m)
		return nil
	})
}

// unlock checks that this rank holds a lock on target, and forgets it.
func (e *epochs) unlock(target int) error {
	return e.change(func(v *epochView) error {
		switch {
		case v.closed:
			return comm.ErrClosed
		case !held(v.locks, target):
			return fmt.Errorf("Unlock of rank %d, which this rank has not locked: %w", target, comm.ErrEpoch)
		}
		v.locks = withLock(v.locks, target, lockNone)
		return nil
	})
}

// beginLockAll marks LockAll as being acquired; it fails when this rank
// holds or is acquiring any lock.
func (e *epochs) beginLockAll() error {
	return e.change(func(v *epochView) error {
		switch {
		case v.closed:
			return comm.ErrClosed
		case v.all != lockNone || len(v.locks) > 0:
			return fmt.Errorf("LockAll with a lock already open: %w", comm.ErrEpoch)
		}
		v.all = lockPending
		return nil
	})
}

// endLockAll records the outcome of LockAll: held or not.
func (e *epochs) endLockAll(ok bool) {
	_ = e.change(func(v *epochView) error {
		v.all = lockNone
		if ok {
			v.all = lockShared
		}
		return nil
	})
}

// unlockAll checks that LockAll is held, and forgets it.
func (e *epochs) unlockAll() error {
	return e.change(func(v *epochView) error {
		switch {
		case v.closed:
			return comm.ErrClosed
		case v.all != lockShared:
			return fmt.Errorf("UnlockAll without LockAll: %w", comm.ErrEpoch)
		}
		v.all = lockNone
		return nil
	})
}

// quiet checks that no lock and no generalized active-target epoch is
// open in v, as a Fence and a Free require.
func (v *epochView) quiet(op string) error {
	switch {
	case v.closed:
		return comm.ErrClosed
	case v.all != lockNone || len(v.locks) > 0:
		return fmt.Errorf("%s with a Lock or LockAll open: %w", op, comm.ErrEpoch)
	case v.started != nil:
		return fmt.Errorf("%s with a Start not Completed: %w", op, comm.ErrEpoch)
	case v.posted != nil:
		return fmt.Errorf("%s with a Post not Waited for: %w", op, comm.ErrEpoch)
	}
	return nil
}

// fenced checks that a Fence may be called, and opens the fence epoch.
func (e *epochs) fenced() error {
	return e.change(func(v *epochView) error {
		if err := v.quiet("Fence"); err != nil {
			return err
		}
		v.fence = true
		return nil
	})
}

// closing checks that the window may be freed and marks it closed.
func (e *epochs) closing() error {
	return e.change(func(v *epochView) error {
		if err := v.quiet("Free"); err != nil {
			return err
		}
		v.closed = true
		return nil
	})
}

// reopen undoes closing, for a Free that failed.
func (e *epochs) reopen() {
	_ = e.change(func(v *epochView) error {
		v.closed = false
		return nil
	})
}

// start opens an access epoch to targets (Start).
func (e *epochs) start(targets []int) error {
	return e.change(func(v *epochView) error {
		switch {
		case v.closed:
			return comm.ErrClosed
		case v.started != nil:
			return fmt.Errorf("Start with a Start not Completed: %w", comm.ErrEpoch)
		}
		v.started = make(map[int]bool, len(targets))
		for _, t := range targets {
			v.started[t] = true
		}
		return nil
	})
}

// complete closes the access epoch of Start and returns its targets.
func (e *epochs) complete() ([]int, error) {
	var ts []int
	err := e.change(func(v *epochView) error {
		switch {
		case v.closed:
			return comm.ErrClosed
		case v.started == nil:
			return fmt.Errorf("Complete without Start: %w", comm.ErrEpoch)
		}
		for t := range v.started {
			ts = append(ts, t)
		}
		v.started = nil
		return nil
	})
	return ts, err
}

// post opens an exposure epoch to origins (Post).
func (e *epochs) post(origins []int) error {
	return e.change(func(v *epochView) error {
		switch {
		case v.closed:
			return comm.ErrClosed
		case v.posted != nil:
			return fmt.Errorf("Post with a Post not Waited for: %w", comm.ErrEpoch)
		}
		v.posted = append([]int{}, origins...)
		return nil
	})
}

// wait closes the exposure epoch of Post and returns its origins.
func (e *epochs) wait() ([]int, error) {
	var os []int
	err := e.change(func(v *epochView) error {
		switch {
		case v.closed:
			return comm.ErrClosed
		case v.posted == nil:
			return fmt.Errorf("Wait without Post: %w", comm.ErrEpoch)
		}
		os, v.posted = v.posted, nil
		return nil
	})
	return os, err
}
