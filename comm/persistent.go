package comm

import "github.com/mpgo/mpgo/comm/internal/engine"

// Persistent point-to-point requests (MPI_Send_init, MPI_Recv_init,
// MPI_Start): a send or receive whose arguments are checked once, then
// started any number of times with [Request.Start] or [StartAll] and
// completed each time with Wait, Test or their families, allocating
// nothing per start. Between two starts the request is inactive: Wait and
// Test return at once, with the last start's outcome (an empty status
// before the first). The buffer is read (send) or written (receive) at
// every start; the caller must not touch it while the request is active.

// SendInit plans a standard-mode send of buf to dst with tag.
func (c *Comm) SendInit(buf []byte, t Type, dst, tag int) (*Request, error) {
	return c.sendInit(buf, t, dst, tag, engine.ModeStandard)
}

// SsendInit plans a synchronous-mode send of buf to dst with tag: each
// start completes only once its receive has matched.
func (c *Comm) SsendInit(buf []byte, t Type, dst, tag int) (*Request, error) {
	return c.sendInit(buf, t, dst, tag, engine.ModeSync)
}

func (c *Comm) sendInit(buf []byte, t Type, dst, tag int, mode engine.Mode) (*Request, error) {
	if dst == ProcNull {
		return c.nullInit(engine.KindSend, t, tag)
	}
	if err := c.checkSend(len(buf), t, dst, tag); err != nil {
		return nil, err
	}
	r := c.newReq(engine.KindSend, false)
	r.SetSend(mode, engine.Type(t), buf)
	peer := c.worldOf(dst)
	r.SetPersistent(func(r *engine.Request) error {
		if err := c.usable(); err != nil {
			return err
		}
		return r.StartSend(c.rank, dst, peer, tag, false)
	})
	return user(r), nil
}

// RecvInit plans a receive into buf from src (or AnySource) with tag (or
// AnyTag).
func (c *Comm) RecvInit(buf []byte, t Type, src, tag int) (*Request, error) {
	if src == ProcNull {
		return c.nullInit(engine.KindRecv, t, tag)
	}
	if err := c.checkRecv(t, src, tag); err != nil {
		return nil, err
	}
	r := c.newReq(engine.KindRecv, false)
	r.SetRecv(engine.Type(t), buf, false)
	return c.recvInit(r, src, tag), nil
}

// recvInit makes receive r, its payload set, persistent: each start posts
// it from src with tag.
func (c *Comm) recvInit(r *engine.Request, src, tag int) *Request {
	peer := c.peerOf(src)
	r.SetPersistent(func(r *engine.Request) error {
		if err := c.usable(); err != nil {
			return err
		}
		return r.StartRecv(src, peer, tag, false)
	})
	return user(r)
}

// nullInit plans an operation of kind with the null rank: each start
// completes at once, as MPI_PROC_NULL's do.
func (c *Comm) nullInit(kind engine.Kind, t Type, tag int) (*Request, error) {
	if err := c.checkNull(kind, t, tag); err != nil {
		return nil, err
	}
	r := c.newReq(kind, false)
	et := engine.Type(t)
	r.SetPersistent(func(r *engine.Request) error {
		r.Null(et, tag, ProcNull)
		return nil
	})
	return user(r), nil
}

// Start starts a persistent request (from SendInit, RecvInit and the
// like) that is inactive: never started, or completed since its last
// start. It fails with an error wrapping [ErrArg] for a request that is
// not persistent or still active; when the operation cannot start (the
// run aborted, the communicator was freed) the request completes with the
// error Start returns.
func (r *Request) Start() error { return r.e().Start() } // a nil r fails with ErrArg there

// StartAll starts every request of rs in order (nil ones skipped), as
// Start does, and returns the first error; the requests before it are
// started.
func StartAll(rs ...*Request) error {
	return engine.StartAll(engineReqs(rs)...)
}

// Free releases an inactive persistent request (MPI_Request_free): later
// starts fail with an error wrapping [ErrArg], and a persistent
// collective's worker goroutine ends. It fails with ErrArg for a request
// that is not persistent, or is active.
func (r *Request) Free() error { return r.e().Free() } // a nil r fails with ErrArg there
