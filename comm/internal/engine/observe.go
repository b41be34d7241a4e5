package engine

import "github.com/mpgo/mpgo/internal/trace"

// The engine's hooks for what a world records of its run (package
// internal/trace: the timeline, the counters). Each rank's endpoint holds
// its recorder, ep.obs, nil when the world records nothing: every hook is
// behind one test of it, which is all that recording costs when off.
//
// A request's start time travels in the request itself, in bits of it
// that padding left free (TestRequestSize pins the Request's size): 37
// bits of the recorder's clock in units of 8 ticks (Clock: the time-stamp
// counter, or nanoseconds), a bit that says it is set, and one that says
// the request is the user's, not a blocking call's (an Isend's request is
// pooled until it is released, after its start). The end of an operation
// recovers the start from them and its own clock, exact for operations
// shorter than 2^40 ticks (6 minutes at 3 GHz); a longer one is shown
// that much shorter.
//
// A clock read costs about 10 ns (RDTSC on the test VM; the vDSO's
// nanotime 25), a twentieth of a message in process: an operation that
// completes while it is posted (an eager send, a receive whose message
// was there, and the receive a send finds posted, for payloads up to
// reuseLimit) ends at the time its post read. A small standard send
// that completes inside its call takes no request at all (sendEager),
// and is recorded there.

const (
	stampShift = 3
	stampBits  = 37
	stampMask  = 1<<stampBits - 1
	stampSet   = 1 << (stampBits + 2)
	stampUser  = 1 << (stampBits + 1)
)

// reuseLimit is the largest payload whose copy is taken to last no time:
// a receive that a send completes ends at the time the send started.
const reuseLimit = 4 << 10

// SetAsync marks r, a pooled send about to start, as a non-blocking
// call's (Isend), for the timeline.
func (r *Request) SetAsync() {
	if r.ep.obs != nil {
		r.t0hi |= stampUser >> 32
	}
}

// stamp marks r as posted by its rank, at the time it returns when o
// keeps a timeline (counters alone need no clock; 0 then).
func (r *Request) stamp(o *trace.Rank) (now int64) {
	v := uint64(stampSet)
	if o.Tracing() {
		now = o.Now()
		v |= uint64(now>>stampShift) & stampMask
	}
	if !r.pooled || r.t0hi&(stampUser>>32) != 0 {
		v |= stampUser
	}
	r.t0hi, r.t0lo = uint8(v>>32), uint32(v)
	return now
}

// started returns r's start (stamp) and end, by the clock of o (zero when
// o keeps no timeline), and whether r is a non-blocking call's, and
// clears the stamp; ok is false when r had none. now is the end when not
// 0 (read by the caller a moment ago).
func (r *Request) started(o *trace.Rank, now int64) (start, end int64, async, ok bool) {
	v := uint64(r.t0hi)<<32 | uint64(r.t0lo)
	if v&stampSet == 0 {
		return 0, 0, false, false
	}
	r.t0hi, r.t0lo = 0, 0
	if o.Tracing() {
		if now <= 0 {
			now = o.Now()
		}
		end = now
		start = now - int64(((uint64(now)>>stampShift)-v)&stampMask)<<stampShift
	}
	return start, end, v&stampUser != 0, true
}

// traceSend records the completion of send r with err (now as started
// has it).
func (r *Request) traceSend(o *trace.Rank, err error, now int64) {
	start, end, async, ok := r.started(o, now)
	if !ok {
		return // not a send this rank posted (a null or shared request)
	}
	n := len(r.buf)
	if from, fromLen := r.from(); from != nil {
		n = fromLen
	}
	o.Sent(start, end, r.ctx, r.src, int(r.to), r.peer, r.tag, n, async, err != nil)
}

// eagerSent records a send that sendEager completed inside the call
// (failed when err is not nil), started and ended at now (0 when the
// rank keeps no timeline).
func (ep *Endpoint) eagerSent(now int64, ctx uint64, src, dst, peer, tag, n int, async bool, err error) {
	if o := ep.obs; o != nil {
		o.Sent(now, now, ctx, src, dst, peer, tag, n, async, err != nil)
	}
}

// completeTraced completes receive r, which matched the message of st,
// and records it (o: its rank's recorder; now as started has it). It is
// counted before it completes, so that the rank's Stats after its return
// include it; its timeline record is written once the receiver is woken,
// off the path to its return: what it holds is taken from r first, which
// is the receiver's again once it completes.
func (r *Request) completeTraced(o *trace.Rank, st Status, err error, now int64) {
	if st.Count > reuseLimit {
		now = 0 // the copy took time
	}
	start, end, async, ok := r.started(o, now)
	if !ok && o.Tracing() {
		end = o.Now()
		start, async = end, !r.pooled // a Mrecv: its message was there when it was posted
	}
	ctx := r.ctx
	o.CountReceived(st.Count)
	r.complete(st, err)
	o.Received(start, end, ctx, st.Source, st.Tag, st.Count, async)
}

// sleepObserved is ev.sleep for a goroutine of a rank that records how
// long it is parked.
func (ep *Endpoint) sleepObserved(ev *event) {
	if o := ep.obs; o != nil && o.Counting() {
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
	if o := ep.obs; o != nil && o.Counting() {
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
func (ep *Endpoint) Observer() *trace.Rank { return ep.rec }

// observer returns ep's recorder for the engine's hooks; nil for no
// endpoint.
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
	if r == nil || r.ep == nil {
		return nil
	}
	return r.ep.rec
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
