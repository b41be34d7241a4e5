package comm

import (
	"fmt"
	"sync/atomic"

	"github.com/mpgo/mpgo/comm/internal/engine"
)

// Message is a message taken off its queue by a matched probe ([Comm.Mprobe],
// [Comm.Improbe]), as MPI_Message is: no receive can match it any more, so
// that when several goroutines of one rank share a communicator, the one
// that probed is the one that receives. Receive it exactly once, with
// [Comm.Mrecv] or [Comm.Imrecv] on the communicator that probed it (or
// typed.Comm's Mrecv). A message from [ProcNull] (Mprobe of ProcNull) is
// received at once, empty.
type Message struct {
	c    *Comm
	cl   *engine.Claimed // nil for the null rank's message
	tag  int             // the null rank's message: the probe's tag
	used atomic.Bool
}

// Mprobe blocks until a message from src with tag can be received, takes
// it off the queue and returns it with its status (Count in bytes), for
// [Comm.Mrecv]: MPI_Mprobe.
func (c *Comm) Mprobe(src, tag int) (*Message, Status, error) {
	if c != nil && c.ct != nil && src == AnySource {
		p := c.replayed(src)
		m, st, err := c.mprobeWait(p, tag)
		c.recordSource(p, st, err)
		return m, st, err
	}
	return c.mprobeWait(src, tag)
}

// mprobeWait is Mprobe.
func (c *Comm) mprobeWait(src, tag int) (*Message, Status, error) {
	for {
		m, st, ok, err := c.mprobe(src, tag, true)
		if err != nil || ok {
			return m, st, err
		}
	}
}

// Improbe is Mprobe without blocking: ok is false, and the message nil,
// when no message from src with tag is there (MPI_Improbe).
func (c *Comm) Improbe(src, tag int) (*Message, Status, bool, error) {
	if c != nil && c.ct != nil {
		if l := c.replayLog(); l != nil {
			return c.improbeLogged(l, src, tag)
		}
	}
	return c.mprobe(src, tag, false)
}

// mprobe claims a message from src with tag. With block, when none is
// there it waits for an arrival that could match and reports ok false
// (the caller claims again).
func (c *Comm) mprobe(src, tag int, block bool) (*Message, Status, bool, error) {
	if src == ProcNull {
		st, err := c.probeNull(tag)
		if err != nil {
			return nil, Status{}, false, err
		}
		return &Message{c: c, tag: tag}, st, true, nil
	}
	if err := c.checkRecv(Byte, src, tag); err != nil {
		return nil, Status{}, false, err
	}
	r := c.newReq(engine.KindProbe, true)
	cl, st, err := r.Claim(src, c.peerOf(src), tag, block)
	if err != nil || cl != nil || !block {
		r.Complete(engine.Status{}, nil)
		c.finish(r)
		if err != nil || cl == nil {
			return nil, Status{}, false, err
		}
		return &Message{c: c, cl: cl}, Status(st), true, nil
	}
	// Queued as a blocked probe: an arrival (or an abort) completes it.
	_, _, err = c.finish(r)
	return nil, Status{}, false, err
}

// Mrecv receives m, taken by a matched probe of c, into buf as elements
// of type t (MPI_Mrecv); Count is in elements of t. The message is
// consumed even when the receive fails (a truncation, a type mismatch).
func (c *Comm) Mrecv(m *Message, buf []byte, t Type) (Status, error) {
	r, err := c.startMrecv(m, buf, t, true)
	if err != nil {
		return Status{}, err
	}
	st, _, err := c.finish(r)
	return st, err
}

// Imrecv is the non-blocking Mrecv (MPI_Imrecv): buf must not be touched
// until the request completes.
func (c *Comm) Imrecv(m *Message, buf []byte, t Type) (*Request, error) {
	r, err := c.startMrecv(m, buf, t, false)
	if err != nil {
		return nil, err
	}
	return user(r), nil
}

// startMrecv checks m and starts its receive; the request is pooled for
// blocking calls.
func (c *Comm) startMrecv(m *Message, buf []byte, t Type, pooled bool) (*engine.Request, error) {
	if err := c.usable(); err != nil {
		return nil, fmt.Errorf("comm: mrecv: %w", err)
	}
	if !t.Valid() {
		return nil, fmt.Errorf("comm: mrecv of %v: %w", t, ErrArg)
	}
	switch {
	case m == nil:
		return nil, fmt.Errorf("comm: mrecv of a nil message: %w", ErrArg)
	case m.c == nil || m.c.ep != c.ep || m.c.ctx != c.ctx:
		return nil, fmt.Errorf("comm: mrecv on %s of a message probed on another communicator: %w", c, ErrArg)
	case !m.used.CompareAndSwap(false, true):
		return nil, fmt.Errorf("comm: mrecv on %s: the message was received already: %w", c, ErrArg)
	}
	if m.cl == nil {
		return c.procNull(engine.KindRecv, t, m.tag, pooled)
	}
	r := c.newReq(engine.KindRecv, pooled)
	r.SetRecv(engine.Type(t), buf, false)
	if err := r.StartClaimed(m.cl); err != nil {
		if pooled {
			r.Complete(engine.Status{}, nil)
			c.finish(r)
		}
		return nil, err
	}
	return r, nil
}
