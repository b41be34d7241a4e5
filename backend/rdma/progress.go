//go:build rdma

package rdma

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mpgo/mpgo/backend/rdma/internal/fabric"
	"github.com/mpgo/mpgo/comm/device"
)

// The RDMA device's progress: reaping the endpoint's completions (which,
// with providers of manual progress such as tcp and shm, is also what
// moves the data), feeding arrivals to the engine in order and driving the
// rendezvous. Two kinds of goroutine do it, one at a time (progMu):
//
//   - A rank about to park on an operation polls for a short window
//     (drive, the engine's progressor hook): the rank that waits for a
//     reply reaps it itself, and finds its request complete without being
//     woken, so a round trip costs no goroutine handoff. At most one rank
//     per device polls (pollers); the others park, and are woken by
//     whoever reaps their completion.
//   - The progress loop, one goroutine per device, is the fallback for
//     when no rank polls: it waits while one does, and for fabricSpin
//     after a rank's wait ended with its operation done (the rank is
//     likely to wait again soon: a ping-pong, a loop of exchanges), so
//     that it does not wake, and take progMu, between every two waits
//     of a rank; a rank that parks unsatisfied kicks it at once. It spins
//     (yielding the P) while traffic flows, and once the device has been
//     quiet for fabricSpin it blocks on the completion queue's wait
//     object (or, when the provider has none, sleeps in growing steps),
//     so an idle process does not burn a core; a post or a rank that
//     starts polling wakes it. It also sends the batches (rdma_batch.go)
//     that nobody waiting sent within batchAge.

const (
	// fabricSpin is how long the loop keeps polling after the last
	// completion before it blocks: long enough to catch the answer of a
	// ping-pong over the provider without a wake-up.
	fabricSpin = 200 * time.Microsecond
	// fabricBlockMS is the longest the loop blocks in one wait.
	fabricBlockMS = 10
	// fabricRankSpin is how long a waiting rank polls before it parks:
	// several round trips of a small message over the tcp provider on
	// loopback (about 30 us), so that a ping-pong's answer is caught by
	// the rank that waits for it even when the machine is busy. A window
	// of about one round trip is metastable: once a late answer makes one
	// side park, its wake-up delays its answer past the other side's
	// window, and both stay on the slow path. Longer waits fall back to
	// the loop, which then blocks at once (the rank spun already).
	fabricRankSpin = 200 * time.Microsecond
	// fabricRankSpinMax bounds a rank's polling while a rendezvous
	// payload moves (see spinning): 4 MiB on loopback.
	fabricRankSpinMax = 2 * time.Millisecond
)

// loop is the progress goroutine; it ends when stop is set.
func (d *Device) loop() {
	defer close(d.stopped)
	nap := time.Microsecond
	polled := false // a rank polled until just now
	rest := time.NewTimer(time.Hour)
	defer rest.Stop()
	for !d.stop.Load() {
		d.flushBatches(false, batchAge)
		if d.resting() {
			d.rest(rest)
			polled = true
			continue
		}
		d.progMu.Lock()
		wait := -1
		quiet := polled || time.Since(time.Unix(0, d.lastReap.Load())) > fabricSpin
		polled = false
		if len(d.deferred) == 0 && quiet && d.batches.Load() == 0 {
			wait = fabricBlockMS
			d.sleeping.Store(true)
			if d.pollers.Load() > 0 { // a rank polls (it saw sleeping false): let it
				d.sleeping.Store(false)
				d.progMu.Unlock()
				continue
			}
		}
		n, ok := d.step(wait, &d.stats.loopReaped)
		d.sleeping.Store(false)
		backlog := len(d.deferred) > 0 || d.batches.Load() > 0
		d.progMu.Unlock()
		if !ok {
			return
		}
		switch {
		case n > 0:
			nap = time.Microsecond
		case wait < 0 || !d.info.Waitable || !d.info.ThreadSafe:
			if quiet && !backlog {
				d.doze(nap) // no wait object: back off
				nap = min(2*nap, d.napMax())
			} else {
				runtime.Gosched()
			}
		}
	}
}

// napMax bounds the loop's sleep between polls when the provider has no
// wait object (shm): a millisecond, except while this process exposes
// window memory (onesided.go). Then another process's write, read or
// atomic on it, which over shm this process's progress carries out and
// which leaves no completion here to keep the loop spinning, waits for
// the loop's next poll: osu_put_latency over shm (a Put and a Flush, 8 B)
// took 1.3-1.9 ms with the loop asleep up to 1 ms at a time, 120-220 us
// with naps of at most rmaNap (then mostly shm's delivery completion:
// 4-25 us without FI_DELIVERY_COMPLETE, which a Flush needs). It costs
// an idle process with a window about a fifth of a core over shm (two
// such processes: 0.38 of a core together, against 0.06 without
// windows; TestFabricExposedIdle); providers with a wait object (net,
// tcp) block as before.
func (d *Device) napMax() time.Duration {
	if d.rma.exposed.Load() > 0 {
		return rmaNap
	}
	return time.Millisecond
}

// doze sleeps for about t. While memory is exposed (napMax) it sleeps
// in the kernel (nanosleep, holding the thread): the Go runtime rounds a
// timer's wait up to a millisecond when nothing else runs (its netpoller
// waits in whole milliseconds), which made the short naps as long as the
// long ones. Otherwise the loop keeps the runtime's sleep: with short
// naps always, this package's tests crashed in the provider (SIGSEGV) in
// 3 of 6 runs, against none in 10 without them; the likely victims are
// its in-process shm jobs, whose endpoints share regions that closing
// frees (see fabricHarness).
func (d *Device) doze(t time.Duration) {
	if t >= time.Millisecond || d.rma.exposed.Load() == 0 {
		time.Sleep(t)
		return
	}
	ts := syscall.NsecToTimespec(int64(t))
	syscall.Nanosleep(&ts, nil)
}

// resting reports whether the loop leaves progress to the ranks: one
// polls, or one's wait ended well less than fabricSpin ago.
func (d *Device) resting() bool {
	return d.pollers.Load() > 0 || time.Since(time.Unix(0, d.lastPoll.Load())) < fabricSpin
}

// rest parks the loop until a rank that stops polling unsatisfied kicks
// it, or for fabricSpin at most (a rank whose wait ended well does not
// kick), then lets the loop look again. idle is written before resting
// is read again, and drive writes pollers and lastPoll before it reads
// idle, so one of the two sees the other: no kick is lost.
func (d *Device) rest(t *time.Timer) {
	d.idle.Store(true)
	if d.resting() && !d.stop.Load() {
		t.Reset(fabricSpin)
		select {
		case <-d.kick:
		case <-t.C:
		}
		t.Stop()
	}
	d.idle.Store(false)
}

// step polls the endpoint once (blocking up to waitMS when positive) and
// handles what it reaped: how many (counted in reaped), and false once
// the device is stopping or the completion queue failed. d.progMu must be
// held.
func (d *Device) step(waitMS int, reaped *atomic.Int64) (int, bool) {
	if d.stop.Load() {
		return 0, false // Close frees the slab once it holds progMu
	}
	d.retryDeferred()
	if !d.aborted && d.worldAborted() {
		d.aborted = true
		d.failHeld(d.e.Err())
		d.ep.Unlink() // the launcher may end this process before it closes
	}
	n, err := d.ep.Poll(d.cs, waitMS)
	if err != nil {
		if !d.stop.Load() {
			d.lost(-1, fmt.Errorf("comm: fabric completion queue: %w", err))
		}
		return 0, false
	}
	if n > 0 {
		d.lastReap.Store(time.Now().UnixNano())
		reaped.Add(int64(n))
	}
	for i := range d.cs[:n] {
		d.complete(&d.cs[i])
	}
	return n, true
}

// Drive implements [device.Progressor]: the waiting rank polls the
// endpoint itself for up to fabricRankSpin, or until w is ready.
func (d *Device) Drive(w device.Waiter) bool {
	if w.Ready() || d.stop.Load() || !d.pollers.CompareAndSwap(0, 1) {
		return w.Ready()
	}
	if d.sleeping.Load() {
		d.ep.Wake() // the loop blocks in Poll holding progMu: get it out
	}
	d.flushBatches(true, 0) // what this process batched may be what w waits for
	start := time.Now()
	for !w.Ready() && d.spinning(start) {
		d.flushBatches(false, 0) // another rank's, batched meanwhile
		if d.progMu.TryLock() {
			_, ok := d.step(-1, &d.stats.rankReaped)
			d.progMu.Unlock()
			if !ok {
				break
			}
		}
		if w.Ready() {
			break
		}
		// Let goroutines of this P run: another local rank, or a pull,
		// may be what completes w.
		runtime.Gosched()
	}
	done := w.Ready()
	if done {
		d.lastPoll.Store(time.Now().UnixNano()) // before pollers: the loop reads them in the other order
	} else {
		d.lastPoll.Store(0) // parking: the loop takes over at once
	}
	d.pollers.Store(0)
	if d.idle.Load() && !done {
		select {
		case d.kick <- struct{}{}:
		default:
		}
	}
	return done
}

// spinning reports whether a rank that began to poll at start polls on:
// for fabricRankSpin, and, while rendezvous payloads are on the wire,
// for up to fabricRankSpinMax: a large payload takes longer than the
// short window, and a rank that parked in the middle of it would be
// woken only through the loop (1 MiB ping-pong over net: 430 us per
// message with the short window, 260 with a 1 ms one).
func (d *Device) spinning(start time.Time) bool {
	t := time.Since(start)
	return t < fabricRankSpin || (t < fabricRankSpinMax && d.moving.Load() > 0)
}

// complete handles one completion (progress only).
func (d *Device) complete(c *fabric.Completion) {
	idx := int(c.ID &^ opMask)
	switch c.ID & opMask {
	case opSendSlot:
		var err error
		if c.Err != nil {
			err = fmt.Errorf("comm: fabric send: %w: %w", device.ErrPeerLost, c.Err)
		}
		d.finishLent(idx, err)
		d.sfree <- idx
		if err != nil {
			d.lost(-1, err)
		}
	case opRecvSlot:
		frame := d.slotBytes(idx)[:c.Len]
		if c.Err != nil || !d.authentic(frame, c.Src) {
			// A stranger's, or a receive that failed: no process of the
			// job sends what does not fit a slot, so this is no sign of a
			// lost peer either (one is found by the sends to it).
			d.stats.rejected.Add(1)
			d.repost(idx)
			return
		}
		if frame[hdrKind] == kindBatch {
			d.arriveBatch(frame)
		} else {
			d.arrive(frame, true)
		}
		d.repost(idx)
	case opWrite:
		d.moving.Add(-1)
		d.mu.Lock()
		rs := d.sends[uint64(idx)]
		delete(d.sends, uint64(idx))
		d.mu.Unlock()
		if rs == nil {
			return
		}
		if c.Err != nil {
			err := fmt.Errorf("comm: rendezvous write to process %d: %w: %w", rs.proc, device.ErrPeerLost, c.Err)
			d.finishSend(rs, err)
			d.lost(rs.proc, err)
			return
		}
		d.stats.rndzWritten.Add(int64(len(rs.data)))
		if !d.info.WriteOrdered {
			d.control(rs.proc, header{kind: kindEnd, from: uint32(d.self), id: rs.rid})
		}
		d.finishSend(rs, nil)
	case opRMA:
		d.rmaComplete(idx, c.Err)
	default:
		if c.Err != nil && !d.stop.Load() {
			d.lost(-1, fmt.Errorf("comm: fabric: %w", c.Err))
		}
	}
}

// repost gives receive slot i back to the provider (progress only).
func (d *Device) repost(i int) {
	if err := d.postRecv(i); errors.Is(err, fabric.ErrAgain) {
		d.deferred = append(d.deferred, func() bool { return !errors.Is(d.postRecv(i), fabric.ErrAgain) })
	} else if err != nil && !d.stop.Load() {
		d.lost(-1, fmt.Errorf("comm: reposting a fabric receive: %w", err))
	}
}

// retryDeferred retries the posts that met EAGAIN (progress only).
func (d *Device) retryDeferred() {
	if len(d.deferred) == 0 {
		return
	}
	keep := d.deferred[:0]
	for _, f := range d.deferred {
		if !f() {
			keep = append(keep, f)
		}
	}
	clear(d.deferred[len(keep):])
	d.deferred = keep
}

// control sends a control message from the loop: it must not block, so a
// post that cannot go now (no free slot, or EAGAIN) is deferred.
func (d *Device) control(proc int, h header) {
	try := func() bool {
		var s int
		select {
		case s = <-d.sfree:
		default:
			return false
		}
		b := d.slotBytes(s)
		h.put(b, d.peers[proc].tokOut)
		if err := d.postSlot(proc, s, &h, fabricHeader); err != nil {
			d.sfree <- s
			if errors.Is(err, fabric.ErrAgain) {
				return false
			}
			if !d.stop.Load() {
				d.lost(proc, d.postError(proc, err))
			}
		}
		return true
	}
	if len(d.deferred) > 0 || !try() {
		d.deferred = append(d.deferred, try)
	}
}

// arrive handles a message (progress only). inSlot: frame is a receive slot,
// reposted once arrive returns.
func (d *Device) arrive(frame []byte, inSlot bool) {
	h, err := d.parseHeader(frame)
	if err != nil {
		proc := -1
		if len(frame) >= fabricHeader && int(h.from) < len(d.peers) && int(h.from) != d.self {
			proc = int(h.from)
		}
		d.lost(proc, fmt.Errorf("comm: a malformed message: %w", err))
		return
	}
	d.peers[h.from].arrived.Add(1) // ends a burst of sends to it (inBurst)
	d.heardFrom(int(h.from))
	switch h.kind {
	case kindHello:
		return
	case kindReply:
		d.reply(&h)
		return
	case kindEnd:
		d.mu.Lock()
		wt := d.pulls[h.id]
		delete(d.pulls, h.id)
		d.mu.Unlock()
		if wt != nil {
			wt.ch <- nil
		}
		return
	case kindAbort:
		d.lost(int(h.from), errors.New("comm: it aborted"))
		return
	}
	p := &d.peers[h.from]
	if h.seq != p.next { // early: keep a copy until its turn
		if p.held == nil {
			p.held = map[uint32][]byte{}
		}
		p.held[h.seq] = append([]byte(nil), frame...)
		d.stats.holds.Add(1)
		return
	}
	d.deliver(&h, frame, inSlot)
	p.next++
	for len(p.held) > 0 {
		f, ok := p.held[p.next]
		if !ok {
			break
		}
		delete(p.held, p.next)
		hh, _ := d.parseHeader(f)
		d.deliver(&hh, f, false)
		p.next++
	}
}

// deliver feeds an ordered message to the engine (progress only). A
// rendezvous the engine matches at once it pulls on a goroutine of its
// own; an eager message it keeps is copied out of its slot before the
// slot is reposted.
func (d *Device) deliver(h *header, frame []byte, inSlot bool) {
	if h.kind == kindBye {
		d.finished(int(h.from))
		return
	}
	env := device.Envelope{Context: h.ctx, Source: int(h.source), Tag: int(h.tag), Type: h.typ, Fingerprint: h.fp, Len: h.n}
	var in device.Incoming
	var er *eagerRemote
	if h.kind == kindEager {
		er = &eagerRemote{d: d, data: frame[fabricHeader:]}
		in = er
	} else {
		env.Rendezvous = true
		in = &rndzRemote{d: d, proc: int(h.from), id: h.id}
	}
	kept, err := d.e.Arrive(h.src, h.dst, env, in)
	switch {
	case errors.Is(err, device.ErrArg) || errors.Is(err, device.ErrRank):
		d.lost(int(h.from), fmt.Errorf("comm: a malformed message: %w", err))
	case err != nil: // the world stopped: the message is dropped
		if h.kind == kindStart {
			d.control(int(h.from), header{kind: kindReply, flags: flagNoData, from: uint32(d.self), id: h.id})
		}
	case kept && er != nil && inSlot:
		er.detach() // queued: off the slot before it is reposted
	}
}

// reply handles RNDZ_REPLY at the sender (progress only): write the payload
// into the receiver's buffer, or finish at once when it took none.
func (d *Device) reply(h *header) {
	d.mu.Lock()
	rs := d.sends[h.id]
	if rs != nil && (h.flags&flagNoData != 0 || len(rs.data) == 0) {
		delete(d.sends, h.id)
	}
	d.mu.Unlock()
	switch {
	case rs == nil:
		return
	case h.flags&flagNoData != 0 || len(rs.data) == 0:
		if len(rs.data) == 0 && h.flags&flagNoData == 0 {
			d.control(rs.proc, header{kind: kindEnd, from: uint32(d.self), id: h.rid})
		}
		d.finishSend(rs, nil)
		return
	case h.n != len(rs.data):
		d.mu.Lock()
		delete(d.sends, h.id)
		d.mu.Unlock()
		err := fmt.Errorf("comm: rendezvous of %d bytes answered for %d: %w", len(rs.data), h.n, device.ErrArg)
		d.finishSend(rs, err)
		d.lost(rs.proc, err)
		return
	}
	rs.rid = h.rid
	id := h.id
	write := func() bool {
		err := d.ep.Write(d.addrs[rs.proc], rs.data, rs.reg.region(), h.addr, h.key, !d.info.WriteOrdered, opWrite|id)
		if errors.Is(err, fabric.ErrAgain) {
			return false
		}
		if err == nil {
			d.moving.Add(1) // until its completion
		} else {
			d.mu.Lock()
			delete(d.sends, id)
			d.mu.Unlock()
			err = fmt.Errorf("comm: rendezvous write to process %d: %w: %w", rs.proc, device.ErrPeerLost, err)
			d.finishSend(rs, err)
			d.lost(rs.proc, err)
			return true
		}
		if d.info.WriteOrdered { // END follows the write in order
			d.control(rs.proc, header{kind: kindEnd, from: uint32(d.self), id: rs.rid})
		}
		return true
	}
	if len(d.deferred) > 0 || !write() {
		d.deferred = append(d.deferred, write)
	}
}

// finishSend completes a rendezvous send; it was removed from sends.
func (d *Device) finishSend(rs *rndzSend, err error) {
	rs.release(d)
	rs.done(err)
}

// failHeld fails every rendezvous the device holds (sends waiting for a
// reply or a write, receives waiting for their data), of process proc or
// of all when proc < 0.
func (d *Device) failHeld(err error) { d.failProc(-1, err) }

func (d *Device) failProc(proc int, err error) {
	var sends []*rndzSend
	d.mu.Lock()
	for id, rs := range d.sends {
		if proc < 0 || rs.proc == proc {
			sends = append(sends, rs)
			delete(d.sends, id)
		}
	}
	for id, wt := range d.pulls {
		if proc < 0 || wt.proc == proc {
			wt.ch <- err
			delete(d.pulls, id)
		}
	}
	d.mu.Unlock()
	for _, rs := range sends {
		d.finishSend(rs, err)
	}
	// Lent sends end at their completions, even to a process that said
	// BYE (it took what was sent before); only the end of the device
	// ends them early.
	if proc < 0 {
		for s := range d.loans {
			d.finishLent(s, err)
		}
		d.failRMA(err)
	}
}

// lost aborts the world because process proc (or, with proc < 0, the
// fabric itself) failed; the rendezvous the device holds fail with it.
// Errors from a process that said BYE, or once the device is closing,
// are expected and ignored.
func (d *Device) lost(proc int, err error) {
	if d.stop.Load() || (proc >= 0 && d.peers[proc].finished.Load()) {
		return
	}
	select {
	case <-d.closing:
		return
	default:
	}
	if proc >= 0 {
		err = fmt.Errorf("comm: process %d: %w: %w", proc, device.ErrPeerLost, err)
	} else if !errors.Is(err, device.ErrPeerLost) {
		err = fmt.Errorf("%w: %w", device.ErrPeerLost, err)
	}
	d.e.PeerLost(err)
	d.failHeld(d.e.Err())
}

// finished handles BYE from process proc: what it sent is all delivered;
// receives still waiting for its ranks, and rendezvous sends to it, fail.
func (d *Device) finished(proc int) {
	d.peers[proc].finished.Store(true)
	d.e.PeerFinished(proc) // the receives and probes pending on proc's ranks fail
	d.failProc(proc, fmt.Errorf("comm: process %d finished and receives nothing more: %w", proc, device.ErrPeerLost))
}

// Close implements [Device]. When the world is running it says BYE to
// every process and waits (bounded) until its sends are delivered; when
// the world aborted it tells them ABORT instead. Then it stops the loop,
// fails what it still holds with device.ErrClosed, and closes the endpoint.
func (d *Device) Close() error {
	d.once.Do(d.close)
	return nil
}

// allFinished reports whether every other process said BYE.
func (d *Device) allFinished() bool {
	for p := range d.peers {
		if p != d.self && !d.peers[p].finished.Load() {
			return false
		}
	}
	return true
}

// fabricDrain bounds how long Close waits for sends in flight, and for
// the other processes' BYE.
const fabricDrain = 10 * time.Second

func (d *Device) close() {
	aborted := d.worldAborted()
	if d.e != nil {
		kind := uint8(kindBye)
		if aborted {
			kind = kindAbort
		}
		for p := range d.peers {
			// BYE goes to every process, even one that said BYE already:
			// it waits for it before closing.
			if p == d.self || (aborted && d.peers[p].finished.Load()) {
				continue
			}
			h := header{kind: kind, from: uint32(d.self)}
			if kind == kindBye {
				d.sendOrdered(p, &h, nil, nil, time.Second)
			} else {
				d.sendControl(p, &h, 100*time.Millisecond)
			}
		}
		// Sends complete (slots come back) once the provider is done with
		// them: wait for that, bounded (a dead peer never acknowledges).
		limit := fabricDrain
		if aborted {
			limit = 200 * time.Millisecond
			d.dropBatches()
		}
		for start := time.Now(); len(d.sfree) < fabricSendSlots && time.Since(start) < limit; {
			time.Sleep(50 * time.Microsecond)
		}
		// A graceful close is collective, as MPI_Finalize is: wait (bounded)
		// until every process said BYE too, so that none sends to an
		// endpoint that is gone (shm faults on a peer region unmapped under
		// it, rather than failing the send).
		for start := time.Now(); !aborted && !d.allFinished() && time.Since(start) < fabricDrain; {
			if d.worldAborted() {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	close(d.closing)
	if d.e != nil {
		d.stop.Store(true)
		d.ep.Wake()
		select {
		case d.kick <- struct{}{}:
		default:
		}
		<-d.stopped
	}
	d.failHeld(fmt.Errorf("comm: fabric device: %w", device.ErrClosed))
	d.mu.Lock()
	d.pullsClosed = true // rendezvous pulls that start from now on fail
	d.mu.Unlock()
	d.pullsWG.Wait()
	// A rank may still be in drive: once stop is set, whoever takes
	// progMu next does nothing, so the slab can go.
	d.progMu.Lock()
	d.free()
	d.progMu.Unlock()
}
