package comm

import (
	"fmt"
	"sync/atomic"

	"github.com/mpgo/mpgo/comm/internal/engine"
)

// Comm is a communicator: a group of ranks and a context of its own, so that
// its messages never match another communicator's. Each rank holds its own
// *Comm value for the same communicator.
//
// The point-to-point methods here work on bytes tagged with an element
// [Type]; package typed wraps them for slices of numbers and structs.
//
// # Goroutines
//
// Several goroutines of a rank may use its Comm at once for point-to-point
// calls (sends, receives, probes) and to wait on or test any requests.
// Collective calls are another matter: the blocking collectives (Barrier,
// Bcast, Allreduce, …, the value collectives), the start of a non-blocking
// collective (Ibcast, …), the planning of a persistent one (AllreduceInit,
// …), Dup, Split, Create, the topology constructors and SetAlgorithm must
// be made by one goroutine of the rank at a time, and in the same order on
// every member. A collective call made while another of the same rank is
// in progress on the Comm fails at once with an error wrapping
// [ErrConcurrent] (an [ErrArg]); the call in progress, and the other
// ranks' calls it meets, go on undisturbed. (Calls that do not overlap in
// time but come in different orders on different ranks cannot be told
// from a program that means them: they meet the wrong calls, as in MPI.)
//
// Non-blocking and persistent collectives, once started, run on a context
// private to each: any number may be in flight at once, beside blocking
// collectives on the same Comm, and their requests may be waited on from
// any goroutine.
type Comm struct {
	// What every call reads, in the object's first cache line (commPad
	// aligns it to one): on 100,000 ranks every line a call touches is a
	// cache miss, as a hundred thousand other ranks ran since this one's
	// last.
	ep    *engine.Endpoint
	w     *engine.World // ep's: usable reads its state without touching ep (one cache miss less a call when ranks are many)
	rank  int
	size  int
	freed *atomic.Bool // set by Free; shared with cc (see create.go)
	busy  *atomic.Bool // set while a collective call of this rank runs on c (guard.go); shared with cc
	cst   *collState   // collective settings and shared-memory state (coll.go); nil until used
	ct    *collTrace   // the collective call in the timeline and counters (observe_coll.go); nil: none

	ctx   uint64 // point-to-point context; ctx|1 is the collective context
	ranks []int  // world rank of each member; nil for the world communicator
	name  string
	kids  uint32                  // communicators created from this one (Dup, Split)
	cc    *Comm                   // the same communicator on its collective context
	label *atomic.Pointer[string] // the name SetName gave c, if any (name.go); shared with cc

	_ [commPad]byte
}

// commPad fills Comm to 192 bytes, a size class whose objects the
// allocator places at multiples of 64 bytes (cache lines) from a page;
// TestHotLayout checks it.
const commPad = 56

// marks are a communicator's flags, allocated together, a cache line to
// themselves: busy is written by its rank at every collective call, and
// the marks of different ranks' communicators, allocated one after the
// other, would otherwise share lines (each rank's write taking the line
// from the others at every call).
type marks struct {
	freed, busy atomic.Bool
	label       atomic.Pointer[string] // SetName's name (name.go)
	_           [marksPad]byte
}

// marksPad fills marks to 64 bytes, the size class the allocator places at
// multiples of 64: a cache line of its own.
const marksPad = 64 - 16

// newComm returns a communicator and its collective twin.
func newComm(ep *engine.Endpoint, ctx uint64, rank, size int, ranks []int, name string) *Comm {
	m := new(marks)
	c := &Comm{ep: ep, w: ep.World(), ctx: ctx, rank: rank, size: size, ranks: ranks, name: name, freed: &m.freed, busy: &m.busy, label: &m.label,
		ct: newCollTrace(ep.Observer())}
	observeComm(ep, c)
	cc := *c
	cc.ctx |= 1
	c.cc = &cc
	return c
}

const worldContext uint64 = 2

// reservedContexts: contexts below it are never a derived communicator's
// (0 carries the engine's control messages between processes, 2 is the
// world's).
const reservedContexts uint64 = 4

// Rank returns the calling rank's number in c, in [0, Size).
func (c *Comm) Rank() int { return c.rank }

// Size returns the number of ranks in c.
func (c *Comm) Size() int { return c.size }

// String names the communicator, as it appears in errors and reports.
func (c *Comm) String() string {
	if c.label != nil {
		if l := c.label.Load(); l != nil {
			return *l
		}
	}
	if c.name == "" {
		return "world"
	}
	return c.name
}

// peerOf returns the world rank of member r, or AnySource for AnySource.
func (c *Comm) peerOf(r int) int {
	if r == AnySource {
		return AnySource
	}
	return c.worldOf(r)
}

// worldOf returns the world rank of member r.
func (c *Comm) worldOf(r int) int {
	if c.ranks == nil {
		return r
	}
	return c.ranks[r]
}

// newReq returns a request for an operation on c. A pooled request serves a
// blocking call and goes back to the pool in finish; any other is the
// caller's.
func (c *Comm) newReq(kind engine.Kind, pooled bool) *engine.Request {
	return c.ep.NewRequest(kind, pooled, c.ctx, c)
}

// finish waits for a pooled request, returns its outcome and recycles it.
func (c *Comm) finish(r *engine.Request) (Status, []byte, error) {
	wild := c.ct != nil && r.WildcardRecv() // read before r is recycled
	st, got, err := r.Finish()
	if wild {
		c.recordFinished(st, err)
	}
	return Status(st), got, err
}

func (c *Comm) usable() error {
	if c == nil || c.ep == nil || c.freed != nil && c.freed.Load() {
		return c.unusable()
	}
	return c.w.Err()
}

// unusable is usable's error for a nil or freed communicator, made in a
// function of its own (not inlined), so that the frames of the calls that
// check keep no room for fmt's arguments (on 100,000 ranks every stack
// line a collective touches is a cache miss: see shmArrive).
//
//go:noinline
func (c *Comm) unusable() error {
	if c == nil || c.ep == nil {
		return fmt.Errorf("comm: nil communicator: %w", ErrArg)
	}
	return fmt.Errorf("comm: %s was freed: %w", c, ErrClosed)
}

// checkSend checks the arguments of a send of n bytes of type t: n must
// be a whole number of elements, as the receiver counts them (a partial
// element would arrive as Count 0 with bytes written), as the collectives
// check their buffers.
func (c *Comm) checkSend(n int, t Type, dst, tag int) error {
	if err := c.usable(); err != nil {
		return fmt.Errorf("comm: send to rank %d tag %d: %w", dst, tag, err)
	}
	if dst < 0 || dst >= c.size {
		return fmt.Errorf("comm: send to rank %d of %d: %w", dst, c.size, ErrRank)
	}
	if tag < 0 {
		return fmt.Errorf("comm: send with tag %d: %w", tag, ErrTag)
	}
	if !t.Valid() {
		return fmt.Errorf("comm: send of %v: %w", t, ErrArg)
	}
	if !t.holds(n) {
		return fmt.Errorf("comm: send to rank %d tag %d: %d bytes is not a whole number of %v: %w", dst, tag, n, t, ErrArg)
	}
	return nil
}

func (c *Comm) checkRecv(t Type, src, tag int) error {
	if err := c.usable(); err != nil {
		return fmt.Errorf("comm: recv from %s tag %s: %w", engine.RankStr(src), engine.TagStr(tag), err)
	}
	if src != AnySource && (src < 0 || src >= c.size) {
		return fmt.Errorf("comm: recv from rank %d of %d: %w", src, c.size, ErrRank)
	}
	if tag < 0 && tag != AnyTag {
		return fmt.Errorf("comm: recv with tag %d: %w", tag, ErrTag)
	}
	if !t.Valid() {
		return fmt.Errorf("comm: recv of %v: %w", t, ErrArg)
	}
	return nil
}

// startSendNow validates and starts a Send or an Isend (async) on a
// pooled request (an Isend's is released to the caller once started): a
// standard-mode send that can complete inside the call does, with no
// request (engine.SendEager, which records it when the world observes
// its run), and returns a nil one. An Isend in a world that records or
// replays its polls takes a request whatever the timing, which its Tests
// are counted on (release).
func (c *Comm) startSendNow(buf []byte, t Type, dst, tag int, mode engine.Mode, async bool) (*engine.Request, error) {
	if dst == ProcNull {
		return c.procNull(engine.KindSend, t, tag, true)
	}
	if err := c.checkSend(len(buf), t, dst, tag); err != nil {
		return nil, err
	}
	if mode == engine.ModeStandard && (!async || c.replayLog() == nil) {
		sent, err := c.ep.SendEager(c.ctx, c.rank, dst, c.worldOf(dst), tag, engine.Type(t), buf, async)
		if err != nil {
			return nil, fmt.Errorf("comm: send to rank %d tag %d: %w", dst, tag, err)
		}
		if sent {
			return nil, nil
		}
	}
	return c.postNewSend(buf, t, dst, tag, mode, true, async)
}

// postNewSend starts a send whose arguments were checked, on a new
// request.
func (c *Comm) postNewSend(buf []byte, t Type, dst, tag int, mode engine.Mode, pooled, async bool) (*engine.Request, error) {
	r := c.newReq(engine.KindSend, pooled)
	r.SetSend(mode, engine.Type(t), buf)
	if async {
		r.SetAsync()
	}
	// postSend, written out: one call less on the path of every send.
	if err := r.StartSend(c.rank, dst, c.worldOf(dst), tag, pooled); err != nil {
		return nil, err
	}
	return r, nil
}

func (c *Comm) startRecv(buf []byte, t Type, src, tag int, owned, pooled bool) (*engine.Request, error) {
	if src == ProcNull {
		return c.procNull(engine.KindRecv, t, tag, pooled)
	}
	if src == AnySource && c.ct != nil {
		src = c.replayed(src)
	}
	if err := c.checkRecv(t, src, tag); err != nil {
		return nil, err
	}
	r := c.newReq(engine.KindRecv, pooled)
	r.SetRecv(engine.Type(t), buf, owned)
	// postRecv, written out: one call less on the path of every receive.
	if err := r.StartRecv(src, c.peerOf(src), tag, pooled); err != nil {
		return nil, err
	}
	if !pooled && c.ct != nil {
		c.pend(r)
	}
	return r, nil
}

// postSend addresses send r (from newReq, its payload set) to rank dst
// with tag and starts it. If it cannot start, a pooled r goes back to the
// pool and the error names the send.
func (c *Comm) postSend(r *engine.Request, dst, tag int, pooled bool) (*engine.Request, error) {
	if err := r.StartSend(c.rank, dst, c.worldOf(dst), tag, pooled); err != nil {
		return nil, err
	}
	return r, nil
}

// postRecv is postSend for receive r, from src (or AnySource).
func (c *Comm) postRecv(r *engine.Request, src, tag int, pooled bool) (*engine.Request, error) {
	if err := r.StartRecv(src, c.peerOf(src), tag, pooled); err != nil {
		return nil, err
	}
	return r, nil
}

func (c *Comm) send(buf []byte, t Type, dst, tag int, mode engine.Mode) error {
	r, err := c.startSendNow(buf, t, dst, tag, mode, false)
	if err != nil || r == nil { // nil: sent already
		return err
	}
	_, _, err = c.finish(r)
	return err
}

// Send sends buf, elements of type t, to rank dst with tag (standard mode:
// it returns once buf may be reused).
func (c *Comm) Send(buf []byte, t Type, dst, tag int) error {
	return c.send(buf, t, dst, tag, engine.ModeStandard)
}

// Ssend sends in synchronous mode: it returns only once the matching
// receive has started.
func (c *Comm) Ssend(buf []byte, t Type, dst, tag int) error {
	return c.send(buf, t, dst, tag, engine.ModeSync)
}

// SendOwned hands buf itself to the receiver: no copy is made when the
// receive is a RecvOwned. The caller must not touch buf afterwards.
func (c *Comm) SendOwned(buf []byte, t Type, dst, tag int) error {
	return c.send(buf, t, dst, tag, engine.ModeOwned)
}

// Isend starts a standard-mode send. buf must not be modified until the
// request completes.
func (c *Comm) Isend(buf []byte, t Type, dst, tag int) (*Request, error) {
	return c.isend(buf, t, dst, tag, engine.ModeStandard)
}

// Issend starts a synchronous-mode send.
func (c *Comm) Issend(buf []byte, t Type, dst, tag int) (*Request, error) {
	return c.isend(buf, t, dst, tag, engine.ModeSync)
}

// IsendOwned starts a SendOwned: buf is handed over, and the caller must
// not touch it afterwards.
func (c *Comm) IsendOwned(buf []byte, t Type, dst, tag int) (*Request, error) {
	return c.isend(buf, t, dst, tag, engine.ModeOwned)
}

// isend starts a non-blocking send on a pooled request. A send that
// completed at once goes back to the pool and the caller gets the shared
// completedSend; one still in flight becomes the caller's.
func (c *Comm) isend(buf []byte, t Type, dst, tag int, mode engine.Mode) (*Request, error) {
	r, err := c.startSendNow(buf, t, dst, tag, mode, true)
	switch {
	case err != nil:
		return nil, err
	case r == nil: // sent already
		return user(engine.CompletedSend()), nil
	}
	return c.release(r), nil
}

// release turns a pooled send request just started into the caller's: a
// shared completed request when it completed at once (r goes back to the
// pool), otherwise r itself.
func (c *Comm) release(r *engine.Request) *Request {
	if c.ct != nil && c.replayLog() != nil {
		return user(r.ReleaseOwn()) // see ReleaseOwn
	}
	return user(r.Release())
}

// Recv receives a message of type t from src (or AnySource) with tag (or
// AnyTag) into buf. Status.Count is in elements of t. A message longer than
// buf fails with ErrTruncate, one of another type with ErrType; either way
// the message is consumed.
func (c *Comm) Recv(buf []byte, t Type, src, tag int) (Status, error) {
	r, err := c.startRecv(buf, t, src, tag, false, true)
	if err != nil {
		return Status{}, err
	}
	st, _, err := c.finish(r)
	return st, err
}

// Irecv starts a receive into buf, which must not be touched until the
// request completes. Each call allocates its request, which stays valid
// for any number of Waits; a loop that posts the same receives every
// iteration allocates nothing with [Comm.RecvInit] and [StartAll]
// instead, and where small messages are many that is faster (osu_bw of
// 8 bytes on 2 goroutine ranks: 1.2-1.5 times the rate, BenchmarkBandwidth's
// persistent rows).
func (c *Comm) Irecv(buf []byte, t Type, src, tag int) (*Request, error) {
	r, err := c.startRecv(buf, t, src, tag, false, false)
	return user(r), err
}

// RecvOwned receives a message as a slice of its own: the sender's slice
// itself after a SendOwned, otherwise a copy.
func (c *Comm) RecvOwned(t Type, src, tag int) ([]byte, Status, error) {
	r, err := c.startRecv(nil, t, src, tag, true, true)
	if err != nil {
		return nil, Status{}, err
	}
	st, got, err := c.finish(r)
	if err != nil {
		return nil, st, err
	}
	return got, st, nil
}

// Sendrecv sends send to dst and receives into recv from src, at once, so
// that rank pairs exchanging data cannot deadlock.
func (c *Comm) Sendrecv(send []byte, st Type, dst, stag int, recv []byte, rt Type, src, rtag int) (Status, error) {
	r, err := c.startRecv(recv, rt, src, rtag, false, true)
	if err != nil {
		return Status{}, err
	}
	if err := c.send(send, st, dst, stag, engine.ModeStandard); err != nil {
		r.Retract(ErrCanceled)
		c.finish(r)
		return Status{}, err
	}
	s, _, err := c.finish(r)
	return s, err
}

// probeNull is a probe of ProcNull: as MPI says, it finds at once an empty
// message from ProcNull with tag AnyTag.
func (c *Comm) probeNull(tag int) (Status, error) {
	r, err := c.procNull(engine.KindProbe, Byte, tag, true)
	if err != nil {
		return Status{}, err
	}
	st, _, _ := c.finish(r)
	return st, nil
}

// Iprobe reports whether a message from src with tag can be received now,
// without receiving it. Status.Count is in bytes, whatever the message's
// type (a probe names none; see [Status]).
func (c *Comm) Iprobe(src, tag int) (Status, bool, error) {
	if c != nil && c.ct != nil {
		if l := c.replayLog(); l != nil {
			return c.iprobeLogged(l, src, tag)
		}
	}
	return c.iprobe(src, tag)
}

// iprobe is Iprobe.
func (c *Comm) iprobe(src, tag int) (Status, bool, error) {
	if src == ProcNull {
		st, err := c.probeNull(tag)
		return st, err == nil, err
	}
	if err := c.checkRecv(Byte, src, tag); err != nil {
		return Status{}, false, err
	}
	r := c.newReq(engine.KindProbe, true)
	st, ok, err := r.Peek(src, c.peerOf(src), tag, false)
	r.Complete(engine.Status{}, nil)
	c.finish(r)
	if err != nil {
		return Status{}, false, err
	}
	return Status(st), ok, nil
}

// Probe blocks until a message from src with tag can be received and
// returns its status without receiving it: the next matching receive gets
// that message. Status.Count is in bytes, whatever the message's type (a
// probe names none; see [Status]): a message of n float64s counts 8n, one
// of a value the size of its encoding.
func (c *Comm) Probe(src, tag int) (Status, error) {
	if c != nil && c.ct != nil && src == AnySource {
		p := c.replayed(src)
		st, err := c.probe(p, tag)
		c.recordSource(p, st, err)
		return st, err
	}
	return c.probe(src, tag)
}

// probe is Probe.
func (c *Comm) probe(src, tag int) (Status, error) {
	if src == ProcNull {
		return c.probeNull(tag)
	}
	if err := c.checkRecv(Byte, src, tag); err != nil {
		return Status{}, err
	}
	for {
		r := c.newReq(engine.KindProbe, true)
		st, ok, err := r.Peek(src, c.peerOf(src), tag, true)
		if err != nil || ok {
			r.Complete(engine.Status{}, nil)
			c.finish(r)
			if err != nil {
				return Status{}, err
			}
			return Status(st), nil
		}
		// Queued as a blocked probe: an arrival (or an abort) completes it.
		if _, _, err := c.finish(r); err != nil {
			return Status{}, err
		}
	}
}
