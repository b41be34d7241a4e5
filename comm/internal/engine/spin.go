package engine

import (
	"runtime"
	"sync/atomic"
	"time"
	_ "unsafe" // go:linkname
)

// Waiting by spinning, when it is safe to and pays.
//
// MPI libraries wait by spinning: each process has a core of its own, so
// a spin sees the peer's store a cache-line transfer after it happens.
// Goroutine ranks that park instead are woken onto their waker's P (the
// runtime readies a goroutine to run next where it was readied), so after
// every exchange two ranks share one P, and the other P's thread, asleep,
// must be woken to steal one of them back: on the 2-core VM this was
// measured on, NPB CG class W on 2 ranks spent a quarter of each rank's
// time runnable but not running (go tool trace), and ran no faster than
// on 1 rank. A waiter that spins keeps its core and is never co-located.
//
// Spinning can also hurt, in two ways, which decide when a waiter spins:
//
//   - A spinning waiter keeps the very goroutine it waits for from running
//     if that one shares its P. So a waiter spins only on evidence that the
//     peer runs on another P: the peer's running mark (below) says its
//     goroutine is on a CPU now, and a goroutine that is running while this
//     one runs cannot be on this one's P. The mark is off from before a
//     rank's goroutine yields or sleeps in the engine until after it runs
//     again, so a peer that was woken but waits in a run queue — behind
//     this waiter, perhaps — reads as off. The spin stops as soon as the
//     mark goes off, and after spinBudget in any case (the mark cannot see
//     a goroutine that blocks outside the engine, or one the scheduler
//     preempted).
//   - Ranks in a tight exchange (a ping-pong, back-to-back small
//     collectives) run faster handing one P to each other than spinning on
//     two, where every message crosses between the cores' caches. So a
//     waiter first yields (poll), which lets a peer queued on its P run at
//     once, and spins only if its rank ran spinAfter or more since its
//     previous wait that the yields did not end: a rank that computes
//     between exchanges.
//
// Measured side by side with the waiter that only yields and parks (the
// engine before; 2 goroutine ranks, GOMAXPROCS 2): NPB CG class W speedup
// over 1 rank 0.84–1.01 → 1.42–1.64 and MG 1.48–1.58 → 1.77–1.83 (mpbench
// npb, 3 alternated runs of 3); the cost, the marks and a clock read per
// slow wait, is 12% on an 8-byte ping-pong, 12% on osu_bw of 8 bytes and
// up to 23% on a 2-rank 8-byte Allreduce (benchstat, 6 runs).
//
// Only worlds with no more ranks than Ps spin at all (World.running is nil
// otherwise): with more, ranks outnumber the Ps and sleeping at once is
// what keeps oversubscribed runs fast. The mark is per rank, so a rank
// whose several goroutines wait in the engine at once keeps an imprecise
// one; that costs at most a spin budget, never correctness.

// spinBudget bounds one spin: long enough to cover a peer's computation
// between two exchanges (20 µs covered too few of NPB CG's: speedup 1.2
// instead of 1.5), short enough that a wrong guess costs little.
const spinBudget = 100 * time.Microsecond

// spinCheck is how many polls of the event pass between two readings of
// the clock.
const spinCheck = 64

// running marks whether a rank's goroutine is on a CPU; padded to a cache
// line of its own, as its peers read it while they spin.
type running struct {
	on       atomic.Bool
	lastWait atomic.Int64 // when the rank last began a wait that its yields did not end (nanotime)
	_        [48]byte     // to a cache line of 64 bytes
}

// nanotime is the runtime's monotonic clock: a wait reads it once, and
// time.Now (wall and monotonic clocks) cost a tenth of an 8-byte
// ping-pong's round trip here. The runtime keeps this name reachable by
// linkname for the packages that use it (runtime/time_nofake.go).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// spinAfter is how long a rank must have run since its last wait for the
// next to spin: ranks in a tight exchange (a ping-pong, back-to-back
// small collectives) hand their P to each other, which spinning on two
// cores would only slow down (each message then crosses between the
// cores' caches); ranks that compute between exchanges keep their cores.
const spinAfter = 2 * time.Microsecond

// markRunning records whether ep's goroutine is on a CPU (a no-op in a
// world that never spins).
func (ep *Endpoint) markRunning(on bool) {
	if m := ep.w.running; m != nil {
		m[ep.rank].on.Store(on)
	}
}

// waitCond is what a waiter waits for: ready once it can go on; awaitedRuns
// whether a rank that can make it ready is marked running. A value type
// per kind of wait (reqCond, wordCond), so that pollFor's instances call
// both directly.
type waitCond interface {
	ready() bool
	awaitedRuns(m []running) bool
	spinning(on bool) // called as a spin starts (true) and ends
}

// reqCond waits for a request's completion.
type reqCond struct{ r *Request }

func (c reqCond) ready() bool                  { return c.r.done() }
func (c reqCond) awaitedRuns(m []running) bool { return c.r.awaitedRuns(m) }
func (reqCond) spinning(bool)                  {}

// wordCond waits for a word to leave the value old: a gate's generation,
// which whichever member arrives last moves on, so any other rank of the
// world may be the one awaited.
type wordCond struct {
	w   *atomic.Uint32
	old uint32
	me  int
}

func (c wordCond) ready() bool { return c.w.Load() != c.old }
func (wordCond) spinning(bool) {}
func (c wordCond) awaitedRuns(m []running) bool {
	return anyOtherRuns(m, c.me)
}

// spinFor busy-waits for c while a rank it waits for runs on another P,
// if ep's rank ran spinAfter or more since its previous slow wait, and
// reports whether c became ready.
func spinFor[C waitCond](ep *Endpoint, c C) bool {
	m := ep.w.running
	if m == nil {
		return c.ready()
	}
	me := &m[ep.rank]
	start := nanotime()
	if start-me.lastWait.Swap(start) < int64(spinAfter) {
		return c.ready()
	}
	c.spinning(true)
	ok := spin(c, m, start+int64(spinBudget))
	c.spinning(false)
	return ok || c.ready()
}

// spin is spinFor's loop, until deadline (nanotime).
func spin[C waitCond](c C, m []running, deadline int64) bool {
	for i := 1; ; i++ {
		if c.ready() {
			return true
		}
		if !c.awaitedRuns(m) {
			return false
		}
		if i%spinCheck == 0 && nanotime() > deadline {
			return c.ready()
		}
	}
}

// anyOtherRuns reports whether a rank other than me is marked running.
func anyOtherRuns(m []running, me int) bool {
	for i := range m {
		if i != me && m[i].on.Load() {
			return true
		}
	}
	return false
}

// awaitedRuns reports whether a rank that can complete r is marked
// running: its peer, or, for a request whose peer is any rank (AnySource)
// or the rank itself (a collective's gate, which the last member to
// arrive opens), any other rank.
func (r *Request) awaitedRuns(m []running) bool {
	if p := r.peer; p >= 0 && p < len(m) && p != r.ep.rank {
		return m[p].on.Load()
	}
	return anyOtherRuns(m, r.ep.rank)
}

// poll waits for r without parking: it yields the P up to the world's
// yields times, then spins where that is safe and pays (see above). It
// reports whether r completed. mark: the caller is its rank's goroutine
// (not a helper of a non-blocking collective), whose running mark poll
// keeps, and which may spin.
func (r *Request) poll(mark bool) bool { return r.pollYields(mark, r.ep.w.yields) }

// pollYields is poll with yields yields (a collective's gate yields even
// where ranks outnumber Ps).
func (r *Request) pollYields(mark bool, yields int) bool {
	if mark && r.watched() {
		if l := r.in.laneOf(r.pr); l != nil && l.near() && r.awaitedRuns(r.ep.w.running) {
			r.in.arm(r.pr) // lane.go: its sender writes the lane from now on
			if l.cond(r).watch(r.ep.w.running) {
				return true
			}
		}
	}
	if l := r.lane(); l != nil { // while it spins, it polls the lane, so that the sender may use it
		return pollFor(r.ep, l.cond(r), mark, yields)
	}
	return pollFor(r.ep, reqCond{r}, mark, yields)
}

// watched reports whether a wait for r by its rank's goroutine may watch
// its pair's lane before it yields: r is a receive from one rank into a
// buffer a lane carries (at most laneMax bytes), in a world whose
// waiters may spin. Where the lane is near (lane.near) and the sender is
// marked running (on another P), the wait arms the lane and watches it.
// Not where the sender shares the waiter's P: there its sends would
// only move the work of matching them to the receiver, while the
// sender, delivering into the posted receive itself, leaves it done
// (a ping-pong with AnySource receives on one side, whose sends take no
// lane: 243-258 -> 271-288 ns one way when such waits armed too).
//
// The watch (laneCond.watch) polls the lane for up to gateSpins rounds
// while the sender is marked running (on another P, then), with the
// lane armed, so that the sender writes its reply there: a cell the
// sender writes and the receiver reads, about one cache-line transfer,
// where the pair's protocol (protocol.go) moves the pair's lock, the
// posted request, the receive buffer and the request's event between
// the two cores' caches, and the receiver's count of spinning waiters
// (laneCond.spinning), which it would raise and lower each wait, a line
// its sender reads before each message. Without the watch, a waiter
// yields first, and ranks in a ping-pong soon share one P, handing it
// back and forth. Measured on 2 goroutine ranks (BenchmarkLatency/mpgo,
// 6 runs each): 8 bytes 236-253 ns one way before, 126-131 after; 0
// bytes the same. Receives into buffers larger than a lane carries are
// not watched: their messages come through the pair, whose protocol
// moves each payload between the cores' caches in more steps, and a
// 1 KiB ping-pong watched that way (before lanes carried 1 KiB) took
// 250-285 ns against 240-250 on one P. Nor are lanes that are far:
// where a cache line takes long to cross between the cores, two ranks on
// one P, handing it back and forth, beat two that watch (nearXfer).
func (r *Request) watched() bool {
	return r.ep.w.running != nil && r.kind == KindRecv && r.pr != nil && r.in != nil &&
		!r.owned && r.sink() == nil && r.flags&flagAsBuf == 0 && len(r.buf) <= laneMax
}

// PollWord waits, as a blocking call's poll does (yields, then spins where
// that is safe and pays), for *w to differ from old, and reports whether
// it did; the caller parks otherwise. For the rank's own goroutine only (it
// keeps the rank's running mark).
//
// Before it yields, it watches the word for up to gateSpins loads while
// another rank is marked running: a collective's gate waits for every
// member, and the last one to arrive is then on another P (running while
// this one runs), so the gate opens a cache-line transfer after it comes;
// a yield would notice a scheduler round later. Measured on 2 goroutine
// ranks (mpbench bcast allreduce alltoall barrier -np 2 -min 8 -max 8, 5
// alternated runs): Bcast 0.38-0.51 -> 0.23-0.33 us, Allreduce 0.40-0.62
// -> 0.25-0.37, Alltoall 0.39-0.65 -> 0.31-0.50, Barrier 0.29-0.45 ->
// 0.19-0.25. Where ranks outnumber Ps (running is nil) it never spins.
func (ep *Endpoint) PollWord(w *atomic.Uint32, old uint32, yields int) bool {
	if m := ep.w.running; m != nil {
		for i := 1; i <= gateSpins; i++ {
			if w.Load() != old {
				return true
			}
			if i%32 == 0 && !anyOtherRuns(m, ep.rank) {
				break
			}
		}
	}
	return pollFor(ep, wordCond{w, old, ep.rank}, true, yields)
}

// gateSpins bounds PollWord's first watch of the word, and a lane's
// (laneCond.watch): about a microsecond, a late member's arrival after a
// barrier or a short computation, or a peer's reply.
const gateSpins = 512

// pollFor yields ep's P up to yields times until c is ready, then spins
// where that is safe and pays (see above), and reports whether c became
// ready. mark: the caller is its rank's goroutine (not a helper of a
// non-blocking collective), whose running mark it keeps, and which may
// spin.
func pollFor[C waitCond](ep *Endpoint, c C, mark bool, yields int) bool {
	mark = mark && ep.w.running != nil // read once: on many ranks every line a waiter touches costs
	for i := 0; i < yields; i++ {
		if c.ready() {
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
	if !mark {
		// A helper does not spin: its own rank's goroutine may be the
		// one queued behind it on its P. Nor does a world that never spins.
		return c.ready()
	}
	return spinFor(ep, c)
}
