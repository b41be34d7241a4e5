package engine

import (
	"fmt"
	"sync"

	"github.com/mpgo/mpgo/comm/device"
)

// The engine's side of the backend boundary (package device): messages
// to ranks of other processes go to the world's Device, and what the
// device receives comes back through engine, the world's implementation
// of [device.Engine], into the receivers' inboxes, where it is matched
// exactly as a local message would be.

// engine is a World as the [device.Engine] its device delivers to. Its
// methods take the same locks as a local sender (match.go) and none
// besides.
type engine World

var _ device.Engine = (*engine)(nil)

// isLocal reports whether world rank r runs in this process.
func (w *World) isLocal(r int) bool { return w.local == nil || w.local[r] }

// sendRemote hands send r to the device: through its SendNow where it
// has one and sends r at once (r completes here), else through Send.
func (ep *Endpoint) sendRemote(r *Request) error {
	env := wireEnvelope(r.ctx, r.src, r.tag, r.typ, len(r.buf))
	env.Sync = r.mode == ModeSync
	sent, err := ep.sendNow(r.peer, env, r.buf)
	if err != nil {
		return err
	}
	if sent {
		r.settleAt(Status{}, nil, 0)
		return nil
	}
	held := (r.remote.Load()>>1+1)<<1 | 1 // a new generation, held by the device
	r.remote.Store(held)
	d := sendDonePool.Get().(*sendDone)
	d.r, d.held = r, held
	err = ep.w.dev.Send(ep.rank, r.peer, env, r.buf, d.fn)
	if err == nil {
		ep.w.sent.Add(1) // for the detector across processes (distdeadlock.go)
	} else {
		d.r = nil // not taken: done is never called
		sendDonePool.Put(d)
	}
	return err
}

// sendDone is the completion of one generation (held) of send r that a
// device took (Device.Send): pooled, with its func value made once, so
// that handing a send to the device allocates nothing (a closure over r
// and held did, at every send). It holds its own generation: a device
// that completes a send late, after a declared deadlock completed the
// request and it was recycled, finds another one in r.
type sendDone struct {
	r    *Request
	held uint32
	fn   func(error)
}

var sendDonePool sync.Pool

func init() {
	sendDonePool.New = func() any { // set here: done refers to the pool
		d := new(sendDone)
		d.fn = d.done
		return d
	}
}

// done is the device's call, exactly once, for d's send.
func (d *sendDone) done(err error) {
	r, held := d.r, d.held
	d.r = nil
	sendDonePool.Put(d)
	if r.remote.CompareAndSwap(held, held&^1) { // else a deadlock completed r
		r.complete(Status{}, err)
	}
}

// wireEnvelope is the envelope of a message of n bytes of type t from
// src with tag on context ctx, as a device carries it.
func wireEnvelope(ctx uint64, src, tag int, t Type, n int) device.Envelope {
	env := device.Envelope{Context: ctx, Source: src, Tag: tag, Len: n}
	env.Type, env.Fingerprint = t.wire()
	return env
}

// sendNow sends a message to world rank peer, of another process,
// through the device's SendNow, where it has one, and reports whether
// the device sent it at once.
func (ep *Endpoint) sendNow(peer int, env device.Envelope, buf []byte) (bool, error) {
	now := ep.w.now
	if now == nil {
		return false, nil
	}
	sent, err := now.SendNow(ep.rank, peer, env, buf)
	if sent && err == nil {
		ep.w.sent.Add(1) // for the detector across processes (distdeadlock.go)
	}
	return sent, err
}

// Arrive implements [device.Engine]: m is matched against dst's posted
// receives as a local message would be. A receive that matches at once
// takes an eager message on the device's goroutine (PullArriving); a
// rendezvous is pulled on a goroutine of the world's (w.pulls), since
// the device's goroutine may be the one that must read its payload.
func (e *engine) Arrive(src, dst int, env device.Envelope, m device.Incoming) (bool, error) {
	w := (*World)(e)
	if src < 0 || src >= len(w.eps) || dst < 0 || dst >= len(w.eps) || !w.isLocal(dst) {
		return false, fmt.Errorf("comm: message from rank %d to rank %d, which is not here: %w", src, dst, ErrRank)
	}
	typ, ok := fromWire(env.Type, env.Fingerprint)
	if !ok || m == nil || env.Len < 0 {
		return false, fmt.Errorf("comm: message of element type %d (fingerprint %08x), %d bytes: %w", env.Type, env.Fingerprint, env.Len, ErrArg)
	}
	if env.Context == controlContext {
		return false, w.control(src, typ, env, m)
	}
	w.arrived.Add(1) // for the detector across processes (distdeadlock.go)
	// Field by field: a composite literal was built in a temporary and
	// copied, 16 bytes at a time, out of the 8-byte stores that had just
	// written it (a stall per load: store forwarding fails).
	var mm msg
	mm.ctx, mm.src, mm.tag, mm.typ, mm.fp = env.Context, env.Source, env.Tag, typ, env.Fingerprint
	mm.remote, mm.size, mm.rdv = m, env.Len, env.Rendezvous
	// An eager message is pulled before Arrive returns: into the
	// receive that matches it, or else into an eager copy (the world's
	// pool, or the queued message's own array) that the device need not
	// keep for it. Only a rendezvous stays with its device.
	mm.arriving = !env.Rendezvous
	in := &w.eps[dst].inbox
	rr, err := in.arrive(in.pairOf(src), &mm, nil)
	switch {
	case err != nil:
		return false, err
	case rr == nil:
		return env.Rendezvous, nil // queued: kept, or copied (eagerPull)
	case !env.Rendezvous:
		take(rr, &mm, 0)
		return false, nil
	case w.start(rr, &mm):
		return false, nil
	}
	pulled := mm // mm itself stays on the stack
	w.pulls.Add(1)
	w.pulling.Add(1)
	go func() {
		defer w.pulls.Done()
		defer w.pulling.Add(-1)
		take(rr, &pulled, 0)
	}()
	return false, nil
}

// start starts the rendezvous m into receive r where m's device can
// (device.Starter) and r takes the payload as it comes (take's plain
// pull: no type error, Sink, Buf, handoff or truncation), and reports
// whether it did: r then completes from the device's progress, with no
// goroutine of the world's waiting for the network.
func (w *World) start(r *Request, m *msg) bool {
	s, ok := m.remote.(device.Starter)
	if !ok || m.size == 0 || m.sreq != nil || m.xbuf != nil || !pulledPlain(r, m) {
		return false
	}
	st := m.status()
	w.pulls.Add(1)
	w.pulling.Add(1) // the receiving rank may park meanwhile: not quiet (distdeadlock.go)
	done := func(err error) {
		if o := r.ep.obs; o != nil {
			r.completeTraced(o, st, err, 0)
		} else {
			r.complete(st, err)
		}
		w.pulling.Add(-1)
		w.pulls.Done()
	}
	if !s.Start(r.buf[:m.size], done) {
		w.pulling.Add(-1)
		w.pulls.Done()
		return false
	}
	m.remote = nil
	return true
}

// PeerFinished implements [device.Engine]: the receives and probes
// pending on a rank of process proc fail with ErrPeerLost. (Messages it
// sent stay receivable; a receive posted later that finds none waits, as
// in MPI.)
func (e *engine) PeerFinished(proc int) {
	w := (*World)(e)
	w.procFinished(proc)
	var fail []*Request
	for r := range w.eps {
		if !w.isLocal(r) {
			continue
		}
		in := &w.eps[r].inbox
		for src := range w.eps {
			if w.process(src) != proc {
				continue
			}
			p := in.pairOf(src)
			p.mu.Lock()
			fail = p.posted.drain(fail)
			fail = append(fail, p.probes...)
			p.probes = nil
			p.mu.Unlock()
		}
	}
	if len(fail) == 0 {
		return
	}
	err := fmt.Errorf("comm: process %d finished and sends nothing more: %w", proc, ErrPeerLost)
	for _, r := range fail {
		r.complete(Status{}, err)
	}
}

// PeerLost implements [device.Engine]: the world aborts, every pending
// operation failing with an error wrapping ErrAborted and cause, and so
// every later one.
func (e *engine) PeerLost(cause error) {
	(*World)(e).AbortWith(cause)
}

// Err implements [device.Engine].
func (e *engine) Err() error { return (*World)(e).failure() }

// readyReq and readyRec are a Request and a waitRec as the
// [device.Waiter] a rank hands the device's progress; pointer
// conversions, so a park allocates nothing.
type (
	readyReq Request
	readyRec waitRec
)

// Ready drains r's lane (lane.go): a local peer's message may wait
// there. Unlike Request.Ready it leaves the rank's deferred work
// (Endpoint.Defer) alone: a device polls it many times a wait, and the
// wait hands that work over itself once the device gives up, before it
// parks, as a wait in one process does after its spin. Handing it over
// at every poll cost a persistent start its own kick (deferred, then
// taken by the Wait that runs the start, then deferred again at the next
// start): between 2 processes a persistent Barrier's start went from
// 0.389 to 0.354 us without it, an 8-byte Allreduce's from 0.415 to 0.395.
func (r *readyReq) Ready() bool { return (*Request)(r).drained() }
func (r *readyRec) Ready() bool {
	w := (*waitRec)(r)
	if !w.done() {
		w.each(func(r *Request) { r.drained() }) // as readyReq's
	}
	return w.done()
}

// drive lets the world's device make progress for r before the rank
// parks, and reports whether r is done.
func (ep *Endpoint) drive(r *Request) bool {
	p := ep.w.progress
	return p != nil && p.Drive((*readyReq)(r))
}

// driveMany is drive for a wait on several requests.
func (ep *Endpoint) driveMany(wr *waitRec) bool {
	p := ep.w.progress
	return p != nil && p.Drive((*readyRec)(wr))
}
