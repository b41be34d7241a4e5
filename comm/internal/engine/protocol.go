package engine

import (
	"errors"
	"fmt"
	"sync"

	"github.com/mpgo/mpgo/buffer"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/comm/internal/memcopy"
)

// The protocols between a sender and the receiver's inbox (shared memory):
//
//   - receiver first: the sender finds the posted receive and copies
//     straight into its buffer (one copy);
//   - sender first, below the eager limit: the payload is copied into a
//     pooled buffer under the pair's lock and the send completes at once,
//     while the pair's eager buffer has room for it (see below);
//   - sender first, at or above the eager limit, every synchronous send,
//     and an eager one that finds its pair's eager buffer full:
//     rendezvous, the message refers to the sender's buffer, the
//     receiver copies from it (one copy) and then completes the sender;
//   - whichever copies, a payload of ShareLimit bytes or more is copied
//     by two goroutines, the matching one and a helper (copyin.go);
//   - SendOwned: the slice itself is queued or handed to the receive; a
//     RecvOwned takes it without copying;
//   - SendFrom: the same as a plain send of its length, the payload
//     produced by a Source where a receive wants it (comm/payload.go).

// The eager buffer. The eager copies that one sender has queued at one
// receiver, not received yet, hold at most the world's eager buffer
// (Config.EagerBuffer, 64 MiB by default) of memory, each counted as its
// payload and msgCost. A message that would go beyond goes by rendezvous
// instead: its data stays in the sender's buffer until a receive takes
// it, a Send returns only then, an Isend's request completes only then
// (Isend itself never waits). So a sender that floods a receiver which
// does not receive (300k sends of 4 KiB took 1.36 GB before) is held up
// once the buffer is full, as the TCP backend holds it up when its
// credit runs out, and MPI order holds: the rendezvous takes its place in
// the same queue. Rendezvous rather than a sender that waits for room:
// no copy at all for those messages, no waiting sender to wake when room
// is made, and MPI allows it (a standard send may wait for its receive).
// What it changes: a program that relies on more buffering than that —
// two ranks that each Send more than the buffer to the other before
// either receives, unsafe under MPI's rules — now blocks, and the
// deadlock detector reports it; MPICH buffers such a backlog too, in the
// receiver's memory without bound, so the default is generous. Messages
// handed over (SendOwned, SendBuf) are the sender's memory and are not
// counted; a device's messages are bounded by the device (TCP's credit).

// msgCost is what a queued eager message costs its pair's eager buffer
// beyond its payload: about what its shell and the rounding of its pool
// block take, as the TCP backend counts wire.MessageCost per message.
const msgCost = 256

// cost is what m, a queued message, costs its pair's eager buffer: its
// payload and msgCost for an eager copy (the engine's memory), nothing for
// a rendezvous, a handoff or a device's message (its sender's, its
// receiver's or the device's memory). The unexpected queue counts it
// while m waits there (unexpQueue.bytes), which is what is bounded:
// a message a matched probe took is the user's to receive, as the
// requests of its Isends are.
func (m *msg) cost() int64 {
	if m.sreq != nil || m.owned || m.remote != nil {
		return 0
	}
	return int64(len(m.data)) + msgCost
}

// msgPool recycles message shells; their eager payloads live in the
// shell itself up to inlineLimit bytes, and beyond in the world's
// buffer.Pool (Knuth's buddy system: one block per queued eager message,
// returned when the message is received), so the eager path allocates
// nothing from the Go heap in steady state.
var msgPool = sync.Pool{New: func() any { return &msg{inline: new([inlineLimit]byte)} }}

func getMsg() *msg { return msgPool.Get().(*msg) }

// eagerCopy makes m.data a copy of data in a block of pool.
func (m *msg) eagerCopy(pool *buffer.Pool, data []byte) {
	memcopy.Copy(m.eagerBlock(pool, len(data)), data)
}

// eagerPull makes m.data a copy of the payload of its local Source (a
// SendFrom below the eager limit that found no receive) or of its
// device's eager message (arriving: inside Engine.Arrive) in a block of
// pool, and forgets the Source: neither the sender nor the device holds
// the payload for the receive.
func (m *msg) eagerPull(pool *buffer.Pool) error {
	err := m.pull(m.eagerBlock(pool, m.size))
	m.remote, m.local, m.arriving = nil, false, false
	return err
}

// eagerBlock makes m.data n bytes of a block of pool (nil when n is 0,
// m's own inline array up to inlineLimit) and returns it.
func (m *msg) eagerBlock(pool *buffer.Pool, n int) []byte {
	switch {
	case n == 0:
		m.data = nil
		return nil
	case n <= inlineLimit && m.inline != nil:
		m.data = m.inline[:n]
		return m.data
	}
	store, err := pool.Get(n)
	if err != nil { // the pool cannot serve it: fall back to the heap
		store = make([]byte, n)
	} else {
		m.pool = pool
	}
	m.store = store
	m.data = store[:n]
	return m.data
}

// freeMsg returns m's eager block to its pool and recycles m.
func freeMsg(m *msg) {
	dropBuf(m)
	if m.pool != nil {
		m.pool.Put(m.store) //nolint:errcheck // the block came from this pool: Put cannot fail
	}
	*m = msg{inline: m.inline}
	msgPool.Put(m)
}

// pull moves m's remote payload into dst (nil: drops it).
func (m *msg) pull(dst []byte) error {
	if m.arriving {
		return m.remote.(device.Incoming).PullArriving(dst)
	}
	return m.remote.Pull(dst)
}

// source returns m's remote payload as the Remote a Sink reads, nil when
// m carries its data.
func (m *msg) source() Remote {
	if m.arriving && m.remote != nil {
		return arrivingPull{m.remote.(device.Incoming)}
	}
	return m.remote
}

// arrivingPull is a device's message taken inside Engine.Arrive, as a
// Sink reads it: through PullArriving.
type arrivingPull struct{ in device.Incoming }

func (a arrivingPull) Pull(dst []byte) error { return a.in.PullArriving(dst) }

// take delivers message m to receive r: type check, copy or handoff,
// completion of the sender (rendezvous) and of r. Neither is in a queue any
// more; no lock is held. now is the clock of r's world's recorder, read a
// moment ago by the caller (observe.go), or 0.
func take(r *Request, m *msg, now int64) {
	st := m.status()
	var err error
	switch {
	case r.typ != Byte && m.typ != r.typ && !m.lateStruct(r.typ):
		err = fmt.Errorf("%w: message of %d bytes of %s, receive of %s", ErrType, m.len(), m.typeName(), r.typ)
	case r.sink() != nil && m.len() > r.x.sink.Cap():
		err = fmt.Errorf("%w: message of %d bytes, receive of %d", ErrTruncate, m.len(), r.x.sink.Cap())
	case r.sink() != nil: // RecvInto (comm/payload.go)
		err = r.x.sink.Take(m.data, m.source(), m.len())
		m.remote = nil
	case r.flags&flagAsBuf != 0:
		err = takeBuf(r, m)
	case m.remote != nil && r.owned:
		r.buf = make([]byte, m.size) // an owned receive's buf is what it received
		err = m.pull(r.buf)
		m.remote = nil
	case m.remote != nil && m.size <= len(r.buf):
		err = m.pull(r.buf[:m.size])
		m.remote = nil
	case m.remote != nil:
		err = fmt.Errorf("%w: message of %d bytes, buffer of %d", ErrTruncate, m.size, len(r.buf))
	case r.owned:
		switch {
		case m.owned && m.xbuf == nil:
			r.buf = m.data
		case m.store != nil && m.pool == nil:
			r.buf, m.store = m.data, nil // a heap copy becomes the receiver's
		default:
			r.buf = append([]byte(nil), m.data...)
		}
	case len(m.data) > len(r.buf):
		err = fmt.Errorf("%w: message of %d bytes, buffer of %d", ErrTruncate, len(m.data), len(r.buf))
	default:
		r.ep.w.copyIn(r.buf, m.data)
	}
	if m.remote != nil { // consumed without its payload: let the sender go
		if perr := m.pull(nil); err == nil {
			err = perr
		}
		m.remote = nil
	}
	// Only now, with its Source dropped, may a local sender return: SendFrom
	// promises that its Source is not called once it returned.
	if s := m.sreq; s != nil {
		m.sreq = nil
		s.complete(Status{}, nil)
	}
	dropBuf(m) // a handed-over Buf that was copied from is ours to free
	if o := r.ep.obs; o != nil {
		r.completeTraced(o, st, err, now)
		return
	}
	r.complete(st, err)
}

// pulledPlain reports whether take delivers m, whose payload is with its
// sender (remote), by pulling it straight into r's buffer: no type
// error, no Sink, Buf or handoff, no truncation (take's branch order).
func pulledPlain(r *Request, m *msg) bool {
	return m.remote != nil && (r.typ == Byte || m.typ == r.typ || m.lateStruct(r.typ)) &&
		r.sink() == nil && r.flags&flagAsBuf == 0 && !r.owned && m.size <= len(r.buf)
}

// takeBuf delivers m to a RecvBuf: the sender's Buf itself when it sent
// one, otherwise a Buf from the world's pool holding a copy.
func takeBuf(r *Request, m *msg) error {
	if m.xbuf != nil {
		r.x.gotBuf, m.xbuf = m.xbuf, nil // r.x: made by SetRecvBuf
		return r.x.gotBuf.Done()         // in flight no more: the receiver owns it
	}
	b, err := r.ep.w.pool.Alloc(m.len())
	if err != nil {
		return err
	}
	data, _ := b.Bytes()
	if m.remote != nil {
		err = m.pull(data)
		m.remote = nil
	} else {
		r.ep.w.copyIn(data, m.data)
	}
	if err != nil {
		b.Free() //nolint:errcheck // fresh and idle
		return err
	}
	r.x.gotBuf = b
	return nil
}

// dropBuf frees the Buf a message carried once its data has been copied
// out (or the message was discarded): the sender gave it up.
func dropBuf(m *msg) {
	if b := m.xbuf; b != nil {
		m.xbuf = nil
		b.Done() //nolint:errcheck // acquired by SendBuf
		b.Free() //nolint:errcheck // idle now, and nobody else holds it
	}
}

// startSend starts send r towards world rank r.peer.
func (ep *Endpoint) startSend(r *Request) error {
	var now int64
	if ep.obs != nil {
		now = r.stamp(ep.obs)
	}
	if !ep.w.isLocal(r.peer) {
		return ep.sendRemote(r)
	}
	in := &ep.w.eps[r.peer].inbox
	p := in.pairOf(ep.rank)
	// The envelope lives on the stack; arrive copies it into a pooled msg
	// only if it has to queue it.
	m := msg{ctx: r.ctx, src: r.src, tag: r.tag, typ: r.typ, data: r.buf}
	from, fromLen := r.from()
	if r.mode == ModeStandard && from == nil && len(r.buf) < ep.w.eagerLimit && ep.sendLane(in, p, &m) {
		r.settleAt(Status{}, nil, now)
		return nil
	}
	switch {
	case r.mode == ModeOwned:
		if r.x != nil {
			m.xbuf = r.x.att
		}
		m.owned = true
	case from != nil: // SendFrom (comm/payload.go)
		m.remote, m.size, m.local = from, fromLen, true
		if fromLen >= ep.w.eagerLimit {
			m.sreq = r
		}
	case r.mode == ModeSync || len(r.buf) >= ep.w.eagerLimit:
		m.sreq = r
	}
	rr, err := in.arrive(p, &m, r)
	if err != nil {
		return err
	}
	if rr != nil {
		m.sreq = nil // the sender completes itself, below
		take(rr, &m, now)
		r.settleAt(Status{}, nil, now)
		return nil
	}
	if m.sreq == nil { // queued as an eager copy or a handoff; else a rendezvous (arrive may have made it one)
		r.settleAt(Status{}, nil, now)
	}
	return nil
}

// sendEager sends buf, a standard-mode message (see SendEager), with no
// request, when it can complete here: an eager message to a rank of this
// process (into the pair's lane, into a receive already posted, or
// copied to the unexpected queue), or one the device sends at once. It
// reports false, having sent nothing, when the send needs a request: a
// rendezvous, no room left for an unexpected copy (arrive would make it
// a rendezvous), or a device that must hold the payload. A rank that
// records its run records the send here (eagerSent): it ends at its
// start, as startSend's eager sends do.
func (ep *Endpoint) sendEager(ctx uint64, src, dst, peer, tag int, t Type, buf []byte, async bool) (bool, error) {
	w := ep.w
	if len(buf) >= w.eagerLimit {
		return false, nil
	}
	var now int64
	if o := ep.obs; o != nil && o.Tracing() {
		now = o.Now()
	}
	if !w.isLocal(peer) {
		sent, err := ep.sendNow(peer, wireEnvelope(ctx, src, tag, t, len(buf)), buf)
		if sent || err != nil {
			ep.eagerSent(now, ctx, src, dst, peer, tag, len(buf), async, err)
		}
		return sent, err
	}
	in := &w.eps[peer].inbox
	p := in.pairOf(ep.rank)
	m := msg{ctx: ctx, src: src, tag: tag, typ: t, data: buf}
	if ep.sendLane(in, p, &m) {
		ep.eagerSent(now, ctx, src, dst, peer, tag, len(buf), async, nil)
		return true, nil
	}
	rr, err := in.arrive(p, &m, eagerOnly)
	switch {
	case err == errNoRoom:
		return false, nil
	case err != nil:
		ep.eagerSent(now, ctx, src, dst, peer, tag, len(buf), async, err)
		return false, err
	case rr != nil:
		take(rr, &m, now)
	}
	ep.eagerSent(now, ctx, src, dst, peer, tag, len(buf), async, nil)
	return true, nil
}

// eagerOnly is the send request sendEager gives arrive, which has none:
// where arrive would turn the message into a rendezvous of that request
// (no room for an unexpected copy), it queues nothing and fails with
// errNoRoom instead.
var eagerOnly = new(Request)

// errNoRoom: an eager message without a request found no room in its
// receiver's unexpected queue (never returned to a user).
var errNoRoom = errors.New("no room for an unexpected message")

// startRecv posts receive r on this rank's inbox.
func (ep *Endpoint) startRecv(r *Request) error {
	var now int64
	if ep.obs != nil {
		now = r.stamp(ep.obs)
	}
	m, err := ep.inbox.post(r)
	if err != nil {
		return err
	}
	if m != nil {
		ep.deliver(r, m, now)
	}
	return nil
}

// deliver hands m, an unexpected message off its queue, to receive r (now
// as take has it).
func (ep *Endpoint) deliver(r *Request, m *msg, now int64) {
	if m.rdv && ep.w.start(r, m) { // the device completes r
		freeMsg(m)
		return
	}
	if m.rdv { // Irecv must not wait for the network (remote.go)
		w := ep.w
		w.pulls.Add(1)
		w.pulling.Add(1) // the receiving rank may park meanwhile: not quiet (distdeadlock.go)
		go func() {
			defer w.pulls.Done()
			defer w.pulling.Add(-1)
			take(r, m, 0)
			freeMsg(m)
		}()
		return
	}
	r.own = true // r was not queued: nobody else can see it yet (settleAt)
	take(r, m, now)
	freeMsg(m)
}

// completedSend is the request Isend returns for a send that completed
// before Isend returned (an eager copy, a handoff, or a receive that was
// already posted): it is immutable, so one serves all, and such sends
// allocate nothing.
var completedSend = func() *Request {
	r := &Request{kind: KindSend}
	r.ev.fire()
	return r
}()
