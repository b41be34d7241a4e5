package engine

import (
	"sync"
	"sync/atomic"
)

// event is a one-shot completion signal that a goroutine waits on without
// allocating: an atomic state, and a sync.Mutex used as a binary semaphore
// (a sync.Mutex is not tied to the goroutine that locked it) for the rare
// waiter that must sleep. Such a sleeper locks the mutex, announces itself
// (armed → sleeping) and blocks in a second Lock, which fire's Unlock
// lets through when it finds a sleeper. So the common cases — the event
// fires before anyone waits, or while the waiter polls — touch one atomic
// and no mutex, and arming a fresh event costs nothing (locking the mutex
// at arm was a sixth of Irecv's time in a profile of osu_bw of 8 bytes).
//
// Invariants:
//   - state moves armed → fired, or armed → sleeping → fired, once per
//     arming; fire is called once per arming.
//   - everything the firer wrote before fire happens before a waiter that
//     observes fired (the atomic swap is the edge).
//   - only a goroutine that holds mu moves state to sleeping, and it then
//     Locks mu again; fire unlocks mu exactly when it moves state from
//     sleeping, so its Unlock always finds mu locked. Every sleeper leaves
//     mu unlocked behind it, passing the wake-up on to the next.
//   - with wake set (pooled requests: one waiter, rearmed after use), the
//     sleeper waits on wake instead and mu is never used.
//
// The zero event is armed; an event must not be copied once in use.
type event struct {
	state atomic.Uint32
	mu    sync.Mutex
	wake  chan struct{} // if set (pooled requests), the sleeper waits here instead of on mu
}

const (
	evArmed uint32 = iota
	evSleeping
	evFired
)

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

// sleep blocks until the event fires.
func (e *event) sleep() {
	if e.wake != nil {
		if e.state.CompareAndSwap(evArmed, evSleeping) {
			<-e.wake
		}
		return
	}
	e.mu.Lock()
	// Only the first sleeper to hold mu can find the event armed; any
	// later one gets mu only once fire has unlocked it, and finds it fired.
	if e.state.CompareAndSwap(evArmed, evSleeping) {
		e.mu.Lock() // fire's Unlock lets it through
	}
	e.mu.Unlock() // and each lets the next one through
}

// rearm resets a fired event for reuse (a pooled request, once its
// waiter has seen it fire).
// An event that never fired (its request completed inside its start,
// settleAt) is left alone: an atomic store is a swap on amd64.
func (e *event) rearm() {
	if e.state.Load() != evArmed {
		e.state.Store(evArmed)
	}
}
