//go:build linux && (amd64 || arm64)

package shm

import (
	"fmt"
	"runtime"
	"time"

	"github.com/mpgo/mpgo/comm/device"
)

// The device's progress: consuming this process's rings, one goroutine at
// a time (pollMu), as the RDMA backend's progress does with its
// completion queue:
//
//   - A rank about to park on an operation polls the rings for a short
//     window (Drive): the rank that waits for a reply reads it itself and
//     finds its request complete without a wake-up, so a round trip costs
//     no goroutine handoff and no system call. At most one rank of the
//     process polls (polls' bit 0); the others park and are woken through the
//     engine.
//   - The receiver loop, one goroutine per process, is the fallback: it
//     rests while a rank polls or just did, spins (yielding its P) while
//     messages flow, and once the rings stayed quiet for spins.loop it
//     sleeps on its bell, an eventfd (segment.go), so that an idle
//     process burns no core; a producer that finds it asleep wakes it.
//
// Where the host's ranks outnumber its cores, spinning only takes the
// core from the process that would answer. Up to yieldOver ranks a core,
// a waiting rank polls for a short window still, but gives its core away
// between two looks (sched_yield), as MPI libraries do oversubscribed
// (Open MPI's yield_when_idle): the process that would answer runs, and
// the answer is seen as soon as the core comes back, where a sleeper
// needed a wake-up through the kernel and the Go runtime, each costing
// more than a round of the host's runnable processes. Beyond that, a
// round of yields outlasts a wake-up: a rank parks at once and the loop
// sleeps at once.

// spins are the polling windows.
type spins struct {
	rank time.Duration // a rank's in Drive
	loop time.Duration // the loop's after the last record
	// yield: a rank in Drive gives its thread's core away between two
	// looks at the rings (oversubscribed hosts, see above).
	yield bool
}

// yieldSpins are the windows of a host whose ranks outnumber its cores by
// yieldOver at most. Tried on 2 cores (Allreduce of 8 B, processes under
// mpiexec): windows of 5-100 µs gave 13-19 µs on 4 processes and 40-90 on
// 8; on 16, windows of 10-100 µs took 1.1-9 ms, more than sleeping at
// once (about 1 ms), whence yieldOver.
var yieldSpins = spins{rank: 20 * time.Microsecond, yield: true}

// yieldOver is the most ranks a core for which a waiting rank polls by
// yielding rather than sleeping at once (yieldSpins).
const yieldOver = 4

// defaultSpins are the windows of a host whose ranks do not outnumber its
// cores: several round trips of a small message (about a microsecond),
// with a margin for a loaded machine, so that a ping-pong's answer is
// caught by the rank that waits for it.
var defaultSpins = spins{rank: 50 * time.Microsecond, loop: 100 * time.Microsecond}

// rvSpin is a waiting rank's polling window while a rendezvous is in
// flight at its process: the wait then lasts as long as the payload's
// copy (about a millisecond for some megabytes), and a rank that parked
// meanwhile would add a wake-up through the loop to it, or, on a busy
// machine, the wait for a time slice.
const rvSpin = 2 * time.Millisecond

// window is a waiting rank's polling window now.
func (d *Device) window() time.Duration {
	if d.spin.rank > 0 && d.rvs.Load() > 0 {
		return max(d.spin.rank, rvSpin)
	}
	return d.spin.rank
}

// pollBatch bounds the records taken from one ring in a row, so that one
// busy sender does not starve the others.
const pollBatch = 64

// driveCheck is how many times a rank polls between two looks at the
// clock, and driveYield between two yields of its P: looking at an empty
// ring costs a few nanoseconds, reading the clock tens, and yielding
// (the global run queue's lock, waking an idle P) hundreds, which would
// otherwise delay noticing an arrival and were half of a waiting rank's
// time in a profile. A yield every driveYield polls (a few microseconds)
// still lets another rank of the process, or a pull, run soon. Where a
// rank yields its core between polls (spins.yield), each poll lasts as
// long as the other runnable processes of the core take, so the window
// is at least 2*driveCheck yields (the clock is first read at the
// driveCheck-th; each runnable process runs once or more
// meanwhile: measured, 8 processes on 2 cores, 8 B Allreduce 46-92 us
// against 684-692 with the clock read every 4 polls), and the rank
// yields its P every driveYield/64 polls.
const (
	driveCheck = 64
	driveYield = 1024
)

// loopNap bounds one sleep of the loop on its bell (it is woken
// explicitly; the bound only limits what a lost wake-up could cost).
const loopNap = 100 * time.Millisecond

// loop is the receiver loop; it ends once stop is set.
func (d *Device) loop() {
	defer close(d.loopDone)
	quiet := time.Now()
	rest := time.NewTimer(time.Hour)
	defer rest.Stop()
	var seen uint64 // the satisfied drives (polls>>1) when the loop last looked
	for !d.stop.Load() {
		parks := d.parks.Load()
		if pg := d.polls.Load(); pg&1 != 0 || pg>>1 != seen {
			seen = pg >> 1
			d.rest(rest, parks)
			quiet = time.Now()
			continue
		}
		n := 0
		if d.pending() && d.pollMu.TryLock() {
			n = d.poll()
			d.pollMu.Unlock()
		}
		switch {
		case n > 0:
			quiet = time.Now()
		case time.Since(quiet) < d.spin.loop:
			runtime.Gosched()
		default:
			d.sleep()
			quiet = time.Now()
		}
	}
}

// rest parks the loop, which found a rank polling or one whose wait ended
// satisfied since it last looked, until a rank that stops polling
// unsatisfied kicks it, or for spins.loop at most; parks is d.parks as
// the loop read it before it looked. idle is written before parks is
// read again, and Drive counts a park before it reads idle, so one of the
// two sees the other: no kick is lost.
func (d *Device) rest(t *time.Timer, parks uint64) {
	d.idle.Store(true)
	if d.parks.Load() == parks && !d.stop.Load() {
		t.Reset(max(d.spin.loop, time.Microsecond))
		select {
		case <-d.kick:
		case <-t.C:
		}
		t.Stop()
	}
	d.idle.Store(false)
}

// sleep puts the loop to sleep reading its bell (an eventfd) until a
// producer or an event (a peer's end, Close) rings it, unless there is
// something to do. The read goes through the runtime's poller, so the
// loop's goroutine parks and its P runs at once what the loop readied (a
// futex wait, a system call, kept the P until the runtime's monitor took
// it back, 20 us to 10 ms later: where ranks outnumber cores, every
// message waited that long); an idle process's last thread sleeps in
// epoll, and the producer's write wakes it.
func (d *Device) sleep() {
	d.seg.sleeping().Store(1)
	if !d.pending() && !d.stop.Load() && d.polls.Load()&1 == 0 {
		d.bell.SetReadDeadline(time.Now().Add(loopNap))
		d.bell.Read(d.bellBuf[:]) //nolint:errcheck // woken, or the nap's end: the loop looks again either way
	}
	d.seg.sleeping().Store(0)
}

// pending reports whether a ring holds a record or a peer's end waits to
// be told; any goroutine may ask.
func (d *Device) pending() bool {
	for _, p := range d.peers {
		if !p.gone.Load() && (!p.in.empty() || p.eof.Load()) {
			return true
		}
	}
	return false
}

// poll consumes what the rings hold, up to pollBatch records of each,
// and tells the engine of the peers that ended; it returns the number of
// records. pollMu must be held.
func (d *Device) poll() int {
	n := 0
	for _, p := range d.peers {
		if p.reported {
			continue
		}
		for range pollBatch {
			payload, ok, err := p.in.peek(&d.h)
			if err == nil && ok {
				err = d.handle(p, &d.h, payload)
			}
			if err != nil {
				d.lose(p, fmt.Errorf("shm: process %d wrote a malformed message: %w", p.proc, err))
				break
			}
			if !ok {
				break
			}
			p.in.next(&d.h)
			n++
			if p.reported {
				break
			}
		}
		if !p.reported && p.eof.Load() && p.in.empty() {
			d.lose(p, fmt.Errorf("shm: its connection ended without a goodbye: %w", device.ErrPeerLost))
		}
	}
	return n
}

// Drive implements [device.Progressor]: the waiting rank polls the rings
// itself for up to spins.rank (at least once), or until w is ready.
func (d *Device) Drive(w device.Waiter) bool {
	if w.Ready() || d.stop.Load() || len(d.peers) == 0 {
		return w.Ready()
	}
	pg := d.polls.Load()
	if pg&1 != 0 || !d.polls.CompareAndSwap(pg, pg|1) {
		return w.Ready()
	}
	// The only poller holds pollMu for its window (the loop rests
	// meanwhile, and polls with TryLock): a lock and an unlock per
	// record handled would be two read-modify-writes on the way of each
	// reply, and pending's loads cost next to nothing.
	d.pollMu.Lock()
	yield := d.spin.yield
	var start time.Time // read lazily: most waits end within the first polls
	for i := 1; ; i++ {
		// poll itself, not pending first: peek looks at the stamp in the
		// cell at a ring's tail, one line from the producer when a record
		// came, where pending reads head, a line more.
		d.poll()
		if w.Ready() {
			break
		}
		if i%driveCheck == 0 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) >= d.window() {
				break
			}
		}
		if yield {
			yieldCore() // to another process of the host, perhaps the one whose answer w waits for
		}
		if i%driveYield == 0 || yield && i%(driveYield/64) == 0 {
			runtime.Gosched() // another local rank, or a pull, may be what completes w
		}
	}
	d.pollMu.Unlock()
	done := w.Ready()
	if done {
		pg += 2 // one more satisfied drive, and nobody polls
	} else {
		d.parks.Add(1) // parking: the loop takes over at once
	}
	d.polls.Store(pg)
	if d.idle.Load() && !done {
		select {
		case d.kick <- struct{}{}:
		default:
		}
	}
	return done
}
