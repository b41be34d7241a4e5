package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// event is a one-shot completion signal that a goroutine waits on without
// allocating: an atomic state and a sync.Mutex used as a binary semaphore
// (a sync.Mutex is not tied to the goroutine that locked it). The mutex is
// held for as long as nobody sleeps on the event; a waiter that must sleep
// announces it (armed → sleeping) and blocks in Lock, and fire unlocks it
// only when it finds a sleeper. So the common cases — the event fires
// before anyone waits, or while the waiter spins — touch one atomic and no
// mutex.
//
// Invariants:
//   - state moves armed → fired, or armed → sleeping → fired, once per
//     arming; fire is called once per arming.
//   - everything the firer wrote before fire happens before a waiter that
//     observes fired (the atomic swap is the edge).
//   - mu is locked except between fire's Unlock and the sleeper's Lock;
//     a sleeper that wakes holds it again, so a consumed event is ready to
//     rearm.
//
// An event must not be copied after arm.
type event struct {
	state atomic.Uint32
	mu    sync.Mutex
	wake  chan struct{} // if set (pooled requests), sleepers wait here instead of on mu
}

const (
	evArmed uint32 = iota
	evSleeping
	evFired
)

// arm prepares a fresh event.
func (e *event) arm() { e.mu.Lock() }

// fire marks the event fired and wakes a sleeper.
func (e *event) fire() {
	if e.state.Swap(evFired) == evSleeping {
		if e.wake != nil {
			e.wake <- struct{}{}
			return
		}
		e.mu.Unlock()
	}
}

func (e *event) fired() bool { return e.state.Load() == evFired }

// pollYields is how many times a waiter yields its P before it sleeps,
// while a world has no more ranks than Ps. Goroutine ranks that talk to
// each other tend to share a P (a woken goroutine runs next on its waker's
// P), so the peer that will complete the operation is usually runnable
// right behind the waiter: yielding lets it run at once, while busy-waiting
// would only delay it. When ranks outnumber Ps, a yield sends the waiter to
// the back of the global run queue, behind every other rank; sleeping at
// once is better there: the waker readies the sleeper to run next on its
// own P, so a pair hands the P back and forth as a channel would.
const pollYields = 2

// poll yields up to yields times and reports whether the event fired.
func (e *event) poll(yields int) bool {
	for i := 0; i < yields; i++ {
		if e.fired() {
			return true
		}
		runtime.Gosched()
	}
	return e.fired()
}

// sleep blocks until the event fires. With consume (a single waiter, the
// event is rearmed and reused) the mutex stays locked afterwards; without
// it the wake-up is passed on to any other sleeper.
func (e *event) sleep(consume bool) {
	if e.wake != nil {
		if e.state.CompareAndSwap(evArmed, evSleeping) {
			<-e.wake
		}
		return
	}
	if e.state.CompareAndSwap(evArmed, evSleeping) || e.state.Load() == evSleeping {
		e.mu.Lock()
		if !consume {
			e.mu.Unlock()
		}
	}
}

// rearm resets a consumed event for reuse.
func (e *event) rearm() { e.state.Store(evArmed) }
