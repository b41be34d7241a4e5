package engine

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Waiting by spinning, when it is safe to.
//
// MPI libraries wait by spinning: each process has a core of its own, so
// a spin sees the peer's store a cache-line transfer after it happens.
// Goroutine ranks may share a P instead, and then a spinning waiter keeps
// the very goroutine it waits for from running (a woken goroutine runs
// next on its waker's P, so talking ranks often do share one). A waiter
// here therefore spins only on evidence that the peer runs on another P:
// the peer's running mark (below) says its goroutine is on a CPU now, and
// a goroutine that is running while this one runs cannot be on this one's
// P. The mark is off from before a rank's goroutine yields or sleeps in
// the engine until after it runs again, so a peer that was woken but
// waits in a run queue — behind this waiter, perhaps — reads as off, and
// the waiter yields and parks as before. The spin stops as soon as the
// mark goes off, and after spinBudget in any case (the mark cannot see a
// goroutine that blocks outside the engine, or one the scheduler
// preempted).
//
// Only worlds with no more ranks than Ps spin at all (World.running is nil
// otherwise): with more, ranks outnumber the Ps and sleeping at once is
// what keeps oversubscribed runs fast. The mark is per rank, so a rank
// whose several goroutines wait in the engine at once keeps an imprecise
// one; that costs at most a spin budget, never correctness.

// spinBudget bounds one spin: long enough to cover a peer's send or
// receive of a small message, and a short computation between two, short
// enough that a wrong guess costs little.
const spinBudget = 20 * time.Microsecond

// spinCheck is how many polls of the event pass between two readings of
// the clock.
const spinCheck = 64

// running marks whether a rank's goroutine is on a CPU; padded to a cache
// line of its own, as its peers read it while they spin.
type running struct {
	on atomic.Bool
	_  [63]byte
}

// markRunning records whether ep's goroutine is on a CPU (a no-op in a
// world that never spins).
func (ep *Endpoint) markRunning(on bool) {
	if m := ep.w.running; m != nil {
		m[ep.rank].on.Store(on)
	}
}

// spin busy-waits for r while the rank it waits for runs on another P,
// and reports whether r completed.
func (r *Request) spin() bool {
	m := r.ep.w.running
	if m == nil {
		return r.ev.fired()
	}
	var deadline time.Time
	for i := 1; ; i++ {
		if r.ev.fired() {
			return true
		}
		if !r.awaitedRuns(m) {
			return false
		}
		if i%spinCheck == 0 {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(spinBudget)
			} else if now.After(deadline) {
				return r.ev.fired()
			}
		}
	}
}

// awaitedRuns reports whether a rank that can complete r is marked
// running: its peer, or, for a request whose peer is any rank (AnySource)
// or the rank itself (a collective's gate, which the last member to
// arrive opens), any other rank.
func (r *Request) awaitedRuns(m []running) bool {
	if p := r.peer; p >= 0 && p < len(m) && p != r.ep.rank {
		return m[p].on.Load()
	}
	for i := range m {
		if i != r.ep.rank && m[i].on.Load() {
			return true
		}
	}
	return false
}

// poll waits for r without parking: it spins while that is safe, then
// yields the P up to the world's yields times. It reports whether r
// completed. mark: the caller is its rank's goroutine (not a helper of a
// non-blocking collective), whose running mark poll keeps.
func (r *Request) poll(mark bool) bool {
	if r.spin() {
		return true
	}
	ep := r.ep
	for i := 0; i < ep.w.yields; i++ {
		if r.ev.fired() {
			return true
		}
		if mark {
			ep.markRunning(false)
		}
		runtime.Gosched()
		if mark {
			ep.markRunning(true)
		}
	}
	return r.ev.fired()
}

