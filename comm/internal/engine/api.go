package engine

import (
	"fmt"
	"sync"

	"github.com/mpgo/mpgo/buffer"
)

// The engine's surface for package comm: making, starting, waiting for
// and recycling requests on an endpoint. comm validates arguments and
// names ranks in communicator terms; the engine matches and moves bytes.

var reqPool = sync.Pool{New: func() any {
	r := &Request{pooled: true}
	r.ev.wake = make(chan struct{}, 1)
	return r
}}

// NewRequest returns a request for an operation of kind on the context
// ctx of the communicator owner. A pooled request serves a blocking call
// and goes back to the pool in Finish; any other is the caller's.
func (ep *Endpoint) NewRequest(kind Kind, pooled bool, ctx uint64, owner fmt.Stringer) *Request {
	var r *Request
	if pooled {
		r = reqPool.Get().(*Request)
	} else {
		r = &Request{}
	}
	r.kind, r.ep, r.owner, r.ctx = kind, ep, owner, ctx
	return r
}

// SetSend gives send r its mode, type and payload.
func (r *Request) SetSend(mode Mode, t Type, buf []byte) { r.mode, r.typ, r.buf = mode, t, buf }

// SetSendFrom gives send r a payload of n bytes of type t that src
// produces (SendFrom).
func (r *Request) SetSendFrom(t Type, src Source, n int) {
	x := r.ext()
	r.typ, x.from, x.fromLen = t, src, n
}

// SetAttached hands b, whose memory buf is, over with send r (SendBuf).
func (r *Request) SetAttached(b *buffer.Buf) { r.ext().att = b }

// SetRecv gives receive r its type and buffer; owned: it takes the
// sender's slice (or a copy of its own) instead of copying into buf, and
// once it completed, buf is that slice (Finish returns it).
func (r *Request) SetRecv(t Type, buf []byte, owned bool) { r.typ, r.buf, r.owned = t, buf, owned }

// SetRecvInto makes receive r deliver through k (RecvInto).
func (r *Request) SetRecvInto(t Type, k Sink) { r.typ, r.ext().sink = t, k }

// SetRecvBuf makes receive r deliver a *buffer.Buf (RecvBuf).
func (r *Request) SetRecvBuf(t Type) {
	r.typ, r.owned, r.flags = t, true, r.flags|flagAsBuf
	r.ext() // takeBuf writes gotBuf there, maybe on another goroutine
}

// SendEager sends buf, a standard-mode message of type t, from src (the
// sender's rank in its communicator) to dst (the receiver's rank there,
// world rank peer) with tag on context ctx, with no request, when the
// send can complete inside the call, and then reports true. Otherwise it
// sends nothing and reports false, and the caller sends through a
// request; or it fails (an abort, the device's error), with an error for
// the caller to wrap. A blocking Send of a small message, and an Isend
// (async) that would return the completed send, need no request.
func (ep *Endpoint) SendEager(ctx uint64, src, dst, peer, tag int, t Type, buf []byte, async bool) (bool, error) {
	return ep.sendEager(ctx, src, dst, peer, tag, t, buf, async)
}

// CompletedSend returns the request Isend returns for a send that
// completed before it returned.
func CompletedSend() *Request { return completedSend }

// StartSend addresses send r from src (the sender's rank in its
// communicator) to the communicator's rank to, world rank peer, with tag,
// and starts it. If it cannot start, a pooled r goes back to the pool and
// the error names the send.
func (r *Request) StartSend(src, to, peer, tag int, pooled bool) error {
	r.src, r.tag, r.to, r.peer = src, tag, int32(to), peer
	if err := r.ep.startSend(r); err != nil {
		return r.unpost(err, pooled)
	}
	return nil
}

// StartRecv posts receive r for messages from src (a rank of its
// communicator, or AnySource), world rank peer (or AnySource), with tag
// (or AnyTag). If it cannot start, a pooled r goes back to the pool and
// the error names the receive.
func (r *Request) StartRecv(src, peer, tag int, pooled bool) error {
	r.src, r.tag, r.peer = src, tag, peer
	if err := r.ep.startRecv(r); err != nil {
		return r.unpost(err, pooled)
	}
	return nil
}

// unpost describes the error that kept r from starting and, if r is
// pooled, puts it back (after describing it: Finish clears r).
func (r *Request) unpost(err error, pooled bool) error {
	err = r.describeErr(err)
	if pooled {
		r.complete(Status{}, nil)
		r.Finish()
	}
	return err
}

// Null completes r, of type t and tag, as an operation with the null rank
// (MPI_PROC_NULL, which comm numbers procNull): at once, with an empty
// status from procNull with AnyTag.
func (r *Request) Null(t Type, tag, procNull int) {
	r.typ, r.src, r.tag, r.to, r.peer = t, procNull, tag, int32(procNull), procNull
	r.complete(Status{Source: procNull, Tag: AnyTag}, nil)
}

// Peek looks, for probe r, for a message from src (world rank peer, or
// AnySource for both) with tag, without receiving it: the oldest one r
// accepts, by its status (Count in bytes). When none is there and
// register is set, r is queued as a blocked probe (an arrival that r
// accepts completes it) and ok is false. An error names the probe.
func (r *Request) Peek(src, peer, tag int, register bool) (st Status, ok bool, err error) {
	r.typ, r.src, r.tag, r.peer = Byte, src, tag, peer
	st, ok, err = r.ep.inbox.peek(r, register)
	if err != nil {
		err = r.describeErr(err)
	}
	return st, ok, err
}

// Complete completes r with st and err: for a request of the caller's
// that no queue holds (a probe that found its message, a request about to
// be finished unused).
func (r *Request) Complete(st Status, err error) { r.complete(st, err) }

// WaitPooled waits for a pooled request to complete (before Finish, to
// read results Finish does not return).
func (r *Request) WaitPooled() {
	if !r.poll(true) {
		r.ep.park(r)
	}
}

// Finish waits for a pooled request, returns its outcome (and a
// RecvOwned's slice) and recycles it.
func (r *Request) Finish() (Status, []byte, error) {
	r.WaitPooled()
	st, err := r.result()
	var got []byte
	if r.owned {
		got = r.buf // what an owned receive received (take)
	}
	if x := r.x; x != nil {
		*x = reqExt{}
	}
	r.ev.rearm()
	r.own = false
	r.buf, r.err, r.st, r.owned, r.mode = nil, nil, Status{}, false, ModeStandard
	r.flags = 0
	r.t0hi, r.t0lo = 0, 0
	r.owner, r.ep, r.in, r.pr = nil, nil, nil, nil
	reqPool.Put(r)
	return st, got, err
}

// Release turns a pooled send request just started into the caller's: the
// shared completed send when it completed at once (r goes back to the
// pool), otherwise r itself.
func (r *Request) Release() *Request {
	if r.done() && r.err == nil {
		r.Finish()
		return completedSend
	}
	// Nobody can sleep on r yet, so it may switch to the mutex wake-up
	// that any number of waiters can share.
	r.pooled, r.ev.wake = false, nil
	return r
}

// GotBuf returns the Buf a RecvBuf received.
func (r *Request) GotBuf() *buffer.Buf {
	if r.x == nil {
		return nil
	}
	return r.x.gotBuf
}

// Retract removes r from its queue and completes it with err; it reports
// false, and does nothing, when r matched already.
func (r *Request) Retract(err error) bool { return r.ep.retract(r, err) }

// Take removes r from its queue without completing it, and reports
// whether it did; false when r was matched or completed already (an
// abort, the deadlock detector). A taken r is the caller's to complete
// (Complete): nobody else can meanwhile, so the caller may first write
// what r's owner reads once r completes.
func (r *Request) Take() bool {
	in := r.in
	return in != nil && in.unqueue(r)
}

// Ready reports whether r completed.
func (r *Request) Ready() bool {
	if !r.done() {
		r.progress()
	}
	return r.done()
}

// Result returns r's outcome, its error naming the operation.
func (r *Request) Result() (Status, error) { return r.result() }

// Cause returns the error r completed with, not naming r's operation:
// for a stand-in receive (one nothing matches, which an abort or the
// deadlock detector fails) whose failure is another operation's.
func (r *Request) Cause() error { return r.err }

// WaitQuiet waits for r as a goroutine of a non-blocking collective does
// (a helper of r's rank, see Endpoint.AddHelper), and returns r's outcome.
// It never parks in the deadlock detector's sight, as the rank's own
// goroutine may be running meanwhile; instead it gives its helper count up
// while it sleeps, and complete counts it back in before waking it.
func (r *Request) WaitQuiet() (Status, error) {
	if !r.done() && !r.poll(false) && !r.ep.drive(r) {
		ep := r.ep
		ep.flushDeferred() // about to sleep, as park
		ep.blockIn()
		defer ep.blockOut()
		r.quiet.Store(quietSleeping)
		ep.helpers.Add(-1)
		r.ev.sleep()
		// complete counted this helper back in before it woke it,
		// unless r completed before it could see quietSleeping.
		if r.quiet.CompareAndSwap(quietSleeping, quietNone) {
			ep.helpers.Add(1)
		}
		r.quiet.Store(quietNone)
		ep.parks.Add(1) // a wake-up, for the detector's second look
	}
	return r.result()
}

// WaitShared blocks the rank of ep until r completes (done is r.Done()),
// yielding its P up to yields times before it parks. Unlike Wait, any
// number of goroutines (of different ranks) may wait on r, all woken at
// once by the close of done; each is recorded as parked on r for the
// deadlock detector (a collective's gate).
func (ep *Endpoint) WaitShared(r *Request, done <-chan struct{}, yields int) {
	if r.pollYields(true, yields) {
		return
	}
	spins := ep.w.running != nil
	ep.flushDeferred()
	p := ep.enter(waitRec{one: r})
	ep.inbox.disarm() // lane.go
	if spins {
		ep.markRunning(false)
	}
	ep.waitObserved(done)
	if spins {
		ep.markRunning(true)
	}
	ep.leave(p)
}
