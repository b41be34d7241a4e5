package comm

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// event is a one-shot completion signal that a goroutine waits on without
// allocating. Its mutex is held while the event is unfired; fire unlocks it
// (a sync.Mutex is not tied to the goroutine that locked it), so a waiter
// that locks it parks on the runtime semaphore until the event fires. The
// mutex's own slow path spins briefly before parking, and only when other
// Ps are running and the local run queue is empty: a waiter never burns a
// core that a runnable rank could use.
//
// Invariants:
//   - fired is set before mu is unlocked, so a waiter that sees fired may
//     read everything the firer wrote before fire (the atomic is the
//     happens-before edge; so is the mutex).
//   - fire is called at most once per arming.
//
// An event must not be copied after arm.
type event struct {
	mu    sync.Mutex
	fired atomic.Bool
}

// arm makes the event unfired. e must be fresh or have been consumed by
// waitOnce.
func (e *event) arm() {
	e.mu.Lock()
	e.fired.Store(false)
}

// fire marks the event fired and wakes a waiter. Called once per arming.
func (e *event) fire() {
	e.fired.Store(true)
	e.mu.Unlock()
}

// spinChecks is how many times a waiter polls the flag, yielding its P in
// between, before it considers parking. A short spin catches the common case
// of a peer that answers within a scheduling quantum (ping-pong), and
// yielding instead of busy-waiting keeps 64 ranks on 2 cores fair.
const spinChecks = 4

// poll spins briefly and reports whether the event fired.
func (e *event) poll() bool {
	for i := 0; i < spinChecks; i++ {
		if e.fired.Load() {
			return true
		}
		runtime.Gosched()
	}
	return e.fired.Load()
}

// park blocks until the event fires and leaves it fired (any number of
// goroutines may park on it).
func (e *event) park() {
	e.mu.Lock()
	e.mu.Unlock() //nolint:staticcheck // hand the fired state on to the next waiter
}

// consume blocks until the event fires and leaves it armed-ready: the mutex
// stays locked, so the next arm only resets the flag. Only for an event with
// a single waiter (pooled requests).
func (e *event) consume() {
	e.mu.Lock()
}

// rearm resets an event after consume.
func (e *event) rearm() {
	e.fired.Store(false)
}
