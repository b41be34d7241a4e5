package engine

import "github.com/mpgo/mpgo/internal/trace"

// The engine's hooks for what a world records of its run (package trace:
// the timeline, the counters). Each rank's endpoint holds its recorder,
// ep.obs, nil when the world records nothing: every hook is behind one
// test of it, which is all that recording costs when off.
//
// A request's start time travels in the request itself, in bits of it
// that padding left free (a Request fills its 288-byte size class): 39
// bits of the set's nanosecond clock, a bit that says it is set, and one
// that says the request is the user's, not a blocking call's (an Isend's
// request is pooled until it is released, after its start). The end of an
// operation recovers the start from them and its own clock, exact for
// operations shorter than 2^38 ns (4.5 minutes); a longer one is shown
// that much shorter.

const (
	stampBits = 38
	stampMask = 1<<stampBits - 1
	stampSet  = 1 << (stampBits + 1)
	stampUser = 1 << stampBits
)

// SetAsync marks r, a pooled send about to start, as a non-blocking
// call's (Isend), for the timeline.
func (r *Request) SetAsync() {
	if r.ep.obs != nil {
		r.t0hi |= stampUser >> 32
	}
}

// stamp marks r as posted by its rank, at now when o keeps a timeline
// (counters alone need no clock).
func (r *Request) stamp(o *trace.Rank) {
	v := uint64(stampSet)
	if o.Tracing() {
		v |= uint64(o.Now()) & stampMask
	}
	if !r.pooled || r.t0hi&(stampUser>>32) != 0 {
		v |= stampUser
	}
	r.t0hi, r.t0lo = uint8(v>>32), uint32(v)
}

// started returns r's start (stamp) and now, by the clock of o (zero
// when o keeps no timeline), and whether r is a non-blocking call's, and
// clears the stamp; ok is false when r had none.
func (r *Request) started(o *trace.Rank) (start, now int64, async, ok bool) {
	v := uint64(r.t0hi)<<32 | uint64(r.t0lo)
	if v&stampSet == 0 {
		return 0, 0, false, false
	}
	r.t0hi, r.t0lo = 0, 0
	if o.Tracing() {
		now = o.Now()
		start = now - int64((uint64(now)-v)&stampMask)
	}
	return start, now, v&stampUser != 0, true
}

// traceSend records the completion of send r with err.
func (r *Request) traceSend(o *trace.Rank, err error) {
	start, now, async, ok := r.started(o)
	if !ok {
		return // not a send this rank posted (a null or shared request)
	}
	n := len(r.buf)
	if r.from != nil {
		n = r.fromLen
	}
	o.Sent(start, now, r.ctx, r.src, r.to, r.peer, r.tag, n, async, err != nil)
}

// traceRecv records that receive r matched the message of st (before r
// completes: st.Count is in bytes).
func (r *Request) traceRecv(o *trace.Rank, st Status) {
	start, now, async, ok := r.started(o)
	if !ok && o.Tracing() {
		now = o.Now()
		start, async = now, !r.pooled // a Mrecv: its message was there when it was posted
	}
	o.Received(start, now, r.ctx, st.Source, st.Tag, st.Count, async)
}

// sleepObserved is ev.sleep for a goroutine of a rank that records how
// long it is parked.
func (ep *Endpoint) sleepObserved(ev *event) {
	if o := ep.obs; o != nil {
		t := o.Now()
		ev.sleep()
		o.Blocked(o.Now() - t)
		return
	}
	ev.sleep()
}

// waitObserved is a receive from c for a parked goroutine of ep's rank
// (sleepObserved).
func (ep *Endpoint) waitObserved(c <-chan struct{}) {
	if o := ep.obs; o != nil {
		t := o.Now()
		<-c
		o.Blocked(o.Now() - t)
		return
	}
	<-c
}

// unexpected records the length of p's unexpected queue, into which a
// message was just queued (p.mu is held).
func (in *inbox) unexpected(p *pair) {
	if o := in.ep.obs; o != nil {
		o.Unexpected(int64(p.unexp.len()))
	}
}

// Observer returns ep's recorder, nil when its world records nothing.
func (ep *Endpoint) Observer() *trace.Rank { return ep.obs }

// observer returns ep's recorder; nil for no endpoint.
func (ep *Endpoint) observer() *trace.Rank {
	if ep == nil {
		return nil
	}
	return ep.obs
}

// Observer returns what w records of its run, nil when nothing.
func (w *World) Observer() *trace.Set { return w.observe }

// Observer returns the recorder of r's rank, nil when its world records
// nothing (or r is the shared completed send, of no rank).
func (r *Request) Observer() *trace.Rank {
	if r == nil {
		return nil
	}
	return r.ep.observer()
}

// WildcardRecv reports whether r is a receive posted for AnySource.
func (r *Request) WildcardRecv() bool { return r.kind == KindRecv && r.peer == AnySource }

// ReleaseOwn is Release for a world that records or replays polls: the
// request becomes the caller's even when it completed at once (never the
// shared completedSend, which belongs to no rank), so that a Test of it
// is counted in its rank's log whatever the timing.
func (r *Request) ReleaseOwn() *Request {
	r.pooled, r.ev.wake = false, nil
	return r
}
