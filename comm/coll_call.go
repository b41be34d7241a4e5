package comm

import (
	"github.com/mpgo/mpgo/comm/internal/coll"
)

// collCall is one rank's side of a point-to-point collective algorithm in
// progress: a coll.Call (the algorithms and how a call fails) whose Peer
// is the collCall itself, sending and receiving messages of the call's
// element type on a collective context.
//
// A quiet call (the goroutine of a non-blocking collective) waits without
// parking in the deadlock detector's sight, as the rank's own goroutine
// may be running meanwhile; instead it counts itself in the rank's
// helpers while it runs (not while it waits; the completion of what it
// waits for counts it back in before waking it), and the detector takes
// a rank with running helpers for a running rank.
type collCall struct {
	coll.Call
	c     *Comm // on a collective context
	t     Type  // element type of data messages
	quiet bool
	// bufs, when not nil, keeps the members' buffers of a collective
	// through shared memory between the calls of a persistent one
	// (collCall.shared).
	bufs *[]*nbBufs
}

var _ coll.Peer = (*collCall)(nil)

// collErrors are the sentinels of the collectives' failures, in coll's
// classes.
var collErrors = coll.Errors{Arg: ErrArg, Truncate: ErrTruncate, Type: ErrType, Rank: ErrRank}

// call returns a call of the collective what with signature sig on c's
// collective context, of elements of type sig.t, reducing with op, failed
// with local when it is not nil. On a non-blocking or persistent
// collective's private communicator, the call first agrees on sig and
// local with the other members (coll_agree.go).
// The call is c's one blocking point-to-point call, kept in its collState
// (collectives on c are called one at a time): it is its own Peer, so a
// fresh one would escape to the heap on every collective.
func (c *Comm) call(what string, sig collSig, op Op, local error) *collCall {
	st := c.state()
	if st.p2p == nil {
		st.p2p = new(collCall)
	}
	x := st.p2p
	*x = collCall{c: c.coll(), t: sig.t, quiet: st.quiet}
	x.Init(x, what, op, sig.t.Size(), &collErrors)
	x.Fail(local)
	if st.private && !st.agreed {
		x.agreeOn(what, sig)
		st.agreed = x.OK() // a persistent collective's arguments stay as they were
	}
	return x
}

// settle ends a call of a collective whose arguments only its root knows
// in full: on a private communicator, the members agree on the outcome
// (coll_agree.go), as every member of the blocking form checks every
// block against the root's arguments.
func (c *Comm) settle(x *collCall, what string) {
	if c.state().private {
		x.settle(what)
	}
}

// newCall returns a call on cc, a collective context.
func (cc *Comm) newCall(what string, t Type, op Op, quiet bool) *collCall {
	x := &collCall{c: cc, t: t, quiet: quiet}
	x.Init(x, what, op, t.Size(), &collErrors)
	return x
}

func (x *collCall) Rank() int { return x.c.rank }
func (x *collCall) Size() int { return x.c.size }

func (x *collCall) Scratch(k, n int) [][]byte { return x.c.scratch(k, n) }

// status converts a receive's status to coll's, in bytes.
func (x *collCall) status(st Status) coll.Status {
	return coll.Status{Tag: st.Tag, Len: st.Count * x.t.Size()}
}

// wait waits for r (a request of a quiet call, or of a flat algorithm's
// batch) and returns its outcome.
func (x *collCall) wait(r *Request) (Status, error) {
	if x.quiet {
		st, err := r.e().WaitQuiet()
		return Status(st), err
	}
	return r.Wait()
}

func (x *collCall) Send(buf []byte, dst, tag int) error {
	if !x.quiet {
		return x.c.Send(buf, x.t, dst, tag)
	}
	r, err := x.c.Isend(buf, x.t, dst, tag)
	if err == nil {
		_, err = x.wait(r)
	}
	return err
}

// Recv receives the next message from src on the call's context, whatever
// its tag; a quiet call waits without parking in the deadlock detector's
// sight.
func (x *collCall) Recv(buf []byte, src int) (coll.Status, error) {
	if !x.quiet {
		st, err := x.c.Recv(buf, x.t, src, AnyTag)
		return x.status(st), err
	}
	r, err := x.c.Irecv(buf, x.t, src, AnyTag)
	if err != nil {
		return coll.Status{}, err
	}
	st, err := x.wait(r)
	return x.status(st), err
}

func (x *collCall) Sendrecv(sbuf []byte, dst, stag int, rbuf []byte, src int) (coll.Status, error) {
	if !x.quiet {
		st, err := x.c.Sendrecv(sbuf, x.t, dst, stag, rbuf, x.t, src, AnyTag)
		return x.status(st), err
	}
	rr, err := x.c.Irecv(rbuf, x.t, src, AnyTag)
	if err != nil {
		return coll.Status{}, err
	}
	sr, err := x.c.Isend(sbuf, x.t, dst, stag)
	if err != nil {
		rr.e().Retract(ErrCanceled)
		return coll.Status{}, err
	}
	st, rerr := x.wait(rr)
	if _, err := x.wait(sr); err != nil {
		return coll.Status{}, err
	}
	return x.status(st), rerr
}

func (x *collCall) Isend(buf []byte, dst, tag int) (coll.Request, error) {
	r, err := x.c.Isend(buf, x.t, dst, tag)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (x *collCall) Irecv(buf []byte, src int) (coll.Request, error) {
	r, err := x.c.Irecv(buf, x.t, src, AnyTag)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (x *collCall) Wait(r coll.Request) (coll.Status, error) {
	st, err := x.wait(r.(*Request))
	return x.status(st), err
}

func (x *collCall) Withdraw(r coll.Request) { r.(*Request).e().Retract(ErrCanceled) }
