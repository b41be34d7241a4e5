package typed

import "github.com/mpgo/mpgo/comm"

// Send sends buf to rank dst with tag (standard mode: it returns once buf
// may be reused).
func (c *Comm[T]) Send(buf []T, dst, tag int) error {
	return c.c.Send(bytesOf(buf), c.t, dst, tag)
}

// Ssend sends in synchronous mode: it returns only once the matching
// receive has started.
func (c *Comm[T]) Ssend(buf []T, dst, tag int) error {
	return c.c.Ssend(bytesOf(buf), c.t, dst, tag)
}

// Isend starts a send; buf must not be modified until the request
// completes.
func (c *Comm[T]) Isend(buf []T, dst, tag int) (*comm.Request, error) {
	return c.c.Isend(bytesOf(buf), c.t, dst, tag)
}

// Issend starts a synchronous-mode send.
func (c *Comm[T]) Issend(buf []T, dst, tag int) (*comm.Request, error) {
	return c.c.Issend(bytesOf(buf), c.t, dst, tag)
}

// Recv receives into buf from src (or [comm.AnySource]) with tag (or
// [comm.AnyTag]). Status.Count is the number of elements received. A
// message longer than buf fails with [comm.ErrTruncate], one of another
// element type with [comm.ErrType]; either way it is consumed.
func (c *Comm[T]) Recv(buf []T, src, tag int) (comm.Status, error) {
	return c.c.Recv(bytesOf(buf), c.t, src, tag)
}

// Irecv starts a receive into buf; buf must not be touched until the
// request completes. For receives posted again every iteration, RecvInit
// and comm.StartAll allocate nothing per start (see [comm.Comm.Irecv]).
func (c *Comm[T]) Irecv(buf []T, src, tag int) (*comm.Request, error) {
	return c.c.Irecv(bytesOf(buf), c.t, src, tag)
}

// Mprobe blocks until a message from src with tag can be received, takes
// it off the queue and returns it with its status, Count in elements of T
// as for every typed call (comm's Mprobe counts bytes), for Mrecv; see
// [comm.Comm.Mprobe].
func (c *Comm[T]) Mprobe(src, tag int) (*comm.Message, comm.Status, error) {
	m, st, err := c.c.Mprobe(src, tag)
	st.Count /= c.size
	return m, st, err
}

// Improbe is Mprobe without blocking (Count in elements of T); see
// [comm.Comm.Improbe].
func (c *Comm[T]) Improbe(src, tag int) (*comm.Message, comm.Status, bool, error) {
	m, st, ok, err := c.c.Improbe(src, tag)
	st.Count /= c.size
	return m, st, ok, err
}

// Mrecv receives m, taken by a matched probe of this communicator, into
// buf (MPI_Mrecv); Count is in elements.
func (c *Comm[T]) Mrecv(m *comm.Message, buf []T) (comm.Status, error) {
	return c.c.Mrecv(m, bytesOf(buf), c.t)
}

// Imrecv is the non-blocking Mrecv; buf must not be touched until the
// request completes.
func (c *Comm[T]) Imrecv(m *comm.Message, buf []T) (*comm.Request, error) {
	return c.c.Imrecv(m, bytesOf(buf), c.t)
}

// SendInit plans a persistent standard-mode send of buf to dst with tag,
// started by Request.Start or comm.StartAll; see [comm.Comm.SendInit].
func (c *Comm[T]) SendInit(buf []T, dst, tag int) (*comm.Request, error) {
	return c.c.SendInit(bytesOf(buf), c.t, dst, tag)
}

// SsendInit plans a persistent synchronous-mode send; see
// [comm.Comm.SsendInit].
func (c *Comm[T]) SsendInit(buf []T, dst, tag int) (*comm.Request, error) {
	return c.c.SsendInit(bytesOf(buf), c.t, dst, tag)
}

// RecvInit plans a persistent receive into buf from src with tag; see
// [comm.Comm.RecvInit].
func (c *Comm[T]) RecvInit(buf []T, src, tag int) (*comm.Request, error) {
	return c.c.RecvInit(bytesOf(buf), c.t, src, tag)
}

// Sendrecv sends send to dst and receives into recv from src at once.
func (c *Comm[T]) Sendrecv(send []T, dst, stag int, recv []T, src, rtag int) (comm.Status, error) {
	return c.c.Sendrecv(bytesOf(send), c.t, dst, stag, bytesOf(recv), c.t, src, rtag)
}

// SendrecvReplace sends buf to dst with stag and receives into buf
// itself from src with rtag (MPI_Sendrecv_replace): the message sent is
// buf as it was, through a copy, whatever arrives first.
func (c *Comm[T]) SendrecvReplace(buf []T, dst, stag, src, rtag int) (comm.Status, error) {
	out := append([]T(nil), buf...)
	return c.Sendrecv(out, dst, stag, buf, src, rtag)
}

// SendOwned hands buf itself to the receiver: a RecvOwned gets this very
// slice, with no copy. The caller gives up buf: it must not read or write
// it afterwards.
func (c *Comm[T]) SendOwned(buf []T, dst, tag int) error {
	return c.c.SendOwned(bytesOf(buf), c.t, dst, tag)
}

// RecvOwned receives a message as a slice of its own: the sender's slice
// itself when it was sent with SendOwned, otherwise a new slice (or the
// eager copy's storage) holding the data.
func (c *Comm[T]) RecvOwned(src, tag int) ([]T, comm.Status, error) {
	b, st, err := c.c.RecvOwned(c.t, src, tag)
	if err != nil {
		return nil, st, err
	}
	s, err := sliceOf[T](b)
	return s, st, err
}

// Probe blocks until a message from src with tag can be received and
// returns its status, Count in elements of T.
func (c *Comm[T]) Probe(src, tag int) (comm.Status, error) {
	st, err := c.c.Probe(src, tag)
	st.Count /= c.size
	return st, err
}

// Iprobe is Probe without blocking.
func (c *Comm[T]) Iprobe(src, tag int) (comm.Status, bool, error) {
	st, ok, err := c.c.Iprobe(src, tag)
	st.Count /= c.size
	return st, ok, err
}
