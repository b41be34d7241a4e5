package engine

import (
	"sync"
	"sync/atomic"

	"github.com/mpgo/mpgo/buffer"

	"github.com/puzpuzpuz/xsync/v4"
)

// The matching engine: one inbox per receiving rank.
//
// Invariants:
//   - An inbox holds, per sending rank, a pair: the receives posted for that
//     source (posted), the messages from it that no receive has matched yet
//     (unexp) and the blocked probes naming it (probes), all guarded by
//     pair.mu. Receives and probes naming AnySource wait in the inbox's own
//     queues, guarded by anyMu.
//   - Lock order: w.mu (world.go: sweep and declareDeadlock hold it around
//     their unqueuing), then anyMu, then pair.mu; no engine code takes
//     them in another order. A device may hold locks of its own when it
//     calls into the engine (the RDMA device's progress lock around
//     Engine.Arrive), so the engine never calls a device (Send, Pull of
//     an Incoming, Drive) while it holds any of these.
//   - What runs under pair.mu besides queue operations: the eager copy of
//     a payload into the world's pool (matchLocked: the sender must be
//     free to reuse its buffer when the send returns, and queuing the
//     copy under the same lock is what keeps the pair's order), including
//     Source.Pull for a SendFrom below the eager limit (Source's contract:
//     it only copies); and completing blocked probes (firing an event
//     never blocks). Delivery into a receive (take) runs with no engine
//     lock held, but possibly under a device's lock: on the RDMA
//     progress loop, take copies an arrival straight from its slot into
//     the receive buffer, or runs the receive's Sink, under progMu.
//   - No message in unexp matches a receive in posted or anyPosted: whoever
//     inserts one checks the other side first, under the same locks.
//   - anyN counts the entries in anyPosted and anyProbes and changes only
//     under anyMu. A sender that reads anyN == 0 while holding its pair's
//     lock may ignore the AnySource queues: a receiver posting to them
//     raises anyN before it scans (and locks) each pair, so either it sees
//     the sender's message or the sender sees anyN > 0 and retakes the
//     locks in order (anyMu, then pair.mu).
//   - rseq orders receives by posting, seq messages by arrival; within one
//     queue order is FIFO (per key (context, tag) once the queue is
//     indexed, index.go). Between a pair's posted queue and anyPosted the
//     lower seq wins; among pairs' unexpected messages the lower seq wins.
//   - Pairs are created under anyMu, so a scan under anyMu sees all.
//   - A request is completed by whoever removed it from its queue, after
//     releasing the locks; blocked probes, which carry no data, are
//     completed under them.
//   - A queued message never refers to the Source of a sender that has
//     completed (comm/payload.go): a SendFrom is queued either by rendezvous
//     (sreq set; the sender completes only after a receive read the Source,
//     or after the message left the queue by sweep or unqueue) or as an
//     eager copy pulled before it is queued (remote and local cleared).
type inbox struct {
	ep *Endpoint

	anyMu     sync.Mutex
	anyN      atomic.Int32
	anyPosted postedQueue
	anyProbes []*Request
	pairList  []*pair                 // every pair, for AnySource scans; guarded by anyMu
	lanes     atomic.Pointer[[]*pair] // the pairs with a lane (lane.go); replaced, never changed, under anyMu

	pairs  atomic.Pointer[xsync.Map[int, *pair]] // by source world rank; created on first use
	direct []atomic.Pointer[pair]                // by source world rank, in worlds of up to directPairs ranks

	// seq numbers the messages as they queue (or enter a lane), rseq the
	// receives as they post: each order is compared only within itself.
	// They are kept off the cache lines of the fields above, which every
	// sender reads (pairOf): sharing a line with direct cost the senders
	// of osu_bw of 8 bytes a tenth of their time in cache misses. And off
	// each other's: the senders write seq, the receiving rank rseq.
	_    [cacheLine]byte
	seq  atomic.Uint64
	_    [cacheLine - 8]byte
	rseq atomic.Uint64
	_    [cacheLine - 8]byte
}

// pair is the state between one sending rank and one receiving rank.
type pair struct {
	mu      sync.Mutex
	posted  postedQueue
	unexp   unexpQueue // its eager copies' cost is bounded by the world's eager buffer (protocol.go)
	probes  []*Request
	claimed []*msg               // taken by a matched probe, awaiting their receive (claim.go)
	src     int                  // sender's world rank
	lane    atomic.Pointer[lane] // small messages while the receiver is active (lane.go); nil until then
}

// msg is a message that arrived before its receive: an eager copy in a
// pooled buffer, a slice handed over (owned), or a reference to a sender's
// buffer that the receiver copies from (rendezvous, and every synchronous
// send), completing the sender's request when done.
type msg struct {
	ctx   uint64
	src   int // sender's rank in the communicator
	tag   int
	typ   Type
	fp    uint32 // from another process: a struct type's fingerprint (structs.go)
	seq   uint64
	data  []byte
	owned bool        // data was handed over by SendOwned (or by a device)
	xbuf  *buffer.Buf // data is this Buf's memory, handed over by SendBuf
	sreq  *Request    // rendezvous: the sender's request; nil once it completed

	remote   Remote       // the payload is with its sender: in another process (a device.Incoming), or a local Source
	rdv      bool         // remote is a rendezvous from another process: pulling it waits for the network
	arriving bool         // remote is a device.Incoming taken inside Engine.Arrive: pulled with PullArriving
	local    bool         // remote is a local sender's Source (SendFrom): pulled into an eager copy if queued without sreq
	size     int          // remote: payload bytes
	store    []byte       // the eager copy's block, as the pool returned it
	pool     *buffer.Pool // where store goes back; nil for heap storage
	lost     error        // claimed, then swept (abort, deadlock) before its receive: why

	prev, next *msg // neighbours in its pair's unexpected queue (index.go)

	// inline holds an eager copy of up to inlineLimit bytes (eagerBlock):
	// such a message takes no block of the world's pool, whose Get and
	// Put each lock a shard. Each pooled shell has its own for life
	// (getMsg, freeMsg, matchLocked keep it); an envelope on a sender's
	// stack has none, which keeps it small to clear.
	inline *[inlineLimit]byte
}

// inlineLimit is the largest eager payload a message shell carries in
// itself: a cache line, the small messages of a message-rate loop.
const inlineLimit = 64

// directPairs is the largest world whose inboxes index their pairs in a
// table (8 bytes a rank per inbox) rather than a concurrent map: a table
// lookup is an order of magnitude cheaper, and the table of a large world
// would cost more memory than idle ranks may (size² pointers).
const directPairs = 256

// pairOf returns the pair for messages from world rank src, creating it.
func (in *inbox) pairOf(src int) *pair {
	if in.direct != nil {
		if p := in.direct[src].Load(); p != nil {
			return p
		}
	} else if m := in.pairs.Load(); m != nil {
		if p, ok := m.Load(src); ok {
			return p
		}
	}
	in.anyMu.Lock()
	defer in.anyMu.Unlock()
	if in.direct != nil {
		p := in.direct[src].Load()
		if p == nil {
			p = &pair{src: src}
			in.pairList = append(in.pairList, p)
			in.direct[src].Store(p)
		}
		return p
	}
	m := in.pairs.Load()
	if m == nil {
		m = xsync.NewMap[int, *pair]()
		in.pairs.Store(m)
	}
	p, ok := m.Load(src)
	if !ok {
		p = &pair{src: src}
		in.pairList = append(in.pairList, p)
		m.Store(src, p)
	}
	return p
}

// matches reports whether a receive or probe r accepts a message with the
// given envelope. The source is checked by the queue r waits in.
func (r *Request) matches(ctx uint64, tag int) bool {
	return r.ctx == ctx && (r.tag == AnyTag || r.tag == tag)
}

func (m *msg) matchedBy(r *Request) bool { return r.matches(m.ctx, m.tag) }

// wakeProbes completes (and removes) the probes in ps that m satisfies;
// the probers re-examine the queues themselves. Returns the remaining
// probes and how many were removed. The locks that guard ps must be held:
// completing a probe only fires its event, which never blocks.
func wakeProbes(ps []*Request, m *msg) ([]*Request, int) {
	k := 0
	for _, p := range ps {
		if m.matchedBy(p) {
			p.complete(Status{}, nil)
			continue
		}
		ps[k] = p
		k++
	}
	removed := len(ps) - k
	clear(ps[k:])
	return ps[:k], removed
}

// arrive delivers m from world rank src: it matches the oldest posted
// receive that accepts it, or a pooled copy of m is queued as unexpected
// (m itself may live on the caller's stack). It returns the receive that
// matched (already removed from its queue; the caller completes it) or nil
// when the message was queued; probes it satisfies are completed. Fails with ErrAborted when the
// world is aborting (m was not queued).
//
// s is the request of a local sender (nil for a device's message): an
// eager message that p's eager buffer has no room for is queued as a
// rendezvous with s instead (m.sreq is set to s then), so that the sender
// waits for its receive rather than the receiver's memory growing.
func (in *inbox) arrive(p *pair, m *msg, s *Request) (*Request, error) {
	in.drain(p) // the lane's messages come first (lane.go)
	p.mu.Lock()
	if in.anyN.Load() == 0 {
		r, err := in.matchLocked(p, m, s, false)
		p.mu.Unlock()
		return r, err
	}
	p.mu.Unlock()
	in.anyMu.Lock()
	p.mu.Lock()
	r, err := in.matchLocked(p, m, s, true)
	p.mu.Unlock()
	in.anyMu.Unlock()
	return r, err
}

// matchLocked is arrive with p.mu held, and anyMu too when withAny (also
// a lane's drain, for each of its messages: lane.go).
func (in *inbox) matchLocked(p *pair, m *msg, s *Request, withAny bool) (*Request, error) {
	if err := in.ep.w.failure(); err != nil {
		return nil, err
	}
	r, i := p.posted.first(m.ctx, m.tag)
	if withAny {
		if a, j := in.anyPosted.first(m.ctx, m.tag); a != nil && (r == nil || a.seq < r.seq) {
			in.anyPosted.take(a, j)
			in.anyN.Add(-1)
			return a, nil
		}
	}
	if r != nil {
		p.posted.take(r, i)
		return r, nil
	}
	eager := m.sreq == nil && !m.owned && (m.local || m.arriving || m.remote == nil) // to be copied here
	if eager && s != nil && p.unexp.bytes+int64(m.len())+msgCost > in.ep.w.eagerBuffer {
		if s == eagerOnly {
			return nil, errNoRoom // sendEager: the caller sends through a request
		}
		m.sreq, eager = s, false // no room: rendezvous
	}
	q := getMsg()
	inline := q.inline
	*q = *m
	q.inline = inline
	if q.seq == 0 { // not numbered as it entered a lane (lane.go)
		q.seq = in.seq.Add(1)
	}
	if eager {
		if q.local || q.arriving {
			if err := q.eagerPull(in.ep.w.pool); err != nil {
				freeMsg(q)
				return nil, err
			}
		} else {
			q.eagerCopy(in.ep.w.pool, q.data)
		}
	}
	p.unexp.push(q)
	in.unexpected(p)
	if q.sreq != nil {
		q.sreq.in, q.sreq.pr = in, p
		q.sreq.ext().m = q // by the sender, in its start
	}
	if len(p.probes) > 0 {
		p.probes, _ = wakeProbes(p.probes, q)
	}
	if withAny && len(in.anyProbes) > 0 {
		var n int
		in.anyProbes, n = wakeProbes(in.anyProbes, q)
		in.anyN.Add(int32(-n))
	}
	return nil, nil
}

// post posts receive r (r.peer is the source's world rank or AnySource). It
// returns the unexpected message r matched (removed from its queue; the
// caller delivers it) or nil when r was queued.
func (in *inbox) post(r *Request) (*msg, error) {
	if r.peer != AnySource {
		p := in.pairOf(r.peer)
		// No drain of p's lane first (lane.go): whatever its lane holds
		// arrived after everything in p.unexp, so a message found there
		// is the oldest r accepts, and the lane's messages meet r, posted,
		// when they are drained (straight into its buffer, while a drain
		// now would queue them as unexpected copies).
		p.mu.Lock()
		if err := in.ep.w.failure(); err != nil {
			p.mu.Unlock()
			return nil, err
		}
		if m := p.unexp.first(r); m != nil {
			p.unexp.remove(m)
			p.mu.Unlock()
			return m, nil
		}
		r.seq = in.rseq.Add(1)
		r.in, r.pr = in, p
		window := p.posted.len() > 0
		p.posted.push(r)
		p.mu.Unlock()
		if window && in.ep.w.lanes {
			in.arm(p) // lane.go
		}
		return nil, nil
	}
	in.drainLanes()
	in.anyMu.Lock()
	defer in.anyMu.Unlock()
	if err := in.ep.w.failure(); err != nil {
		return nil, err
	}
	in.anyN.Add(1) // before the scan: see the invariants
	if p, m := in.scanLocked(r, true); p != nil {
		p.unexp.remove(m)
		p.mu.Unlock()
		in.anyN.Add(-1)
		return m, nil
	}
	r.seq = in.rseq.Add(1)
	r.in, r.pr = in, nil
	in.anyPosted.push(r)
	return nil, nil
}

// scanLocked finds, across all pairs, the oldest unexpected message that r
// accepts. anyMu must be held. When keep is true and a message is found,
// its pair is returned still locked.
func (in *inbox) scanLocked(r *Request, keep bool) (*pair, *msg) {
	var best *pair
	var bestSeq uint64
	for _, p := range in.pairList {
		p.mu.Lock()
		if m := p.unexp.first(r); m != nil && (best == nil || m.seq < bestSeq) {
			best, bestSeq = p, m.seq
		}
		p.mu.Unlock()
	}
	if best == nil {
		return nil, nil
	}
	// Senders that reached best since the scan found anyN > 0 and wait
	// for anyMu, so best's unexpected queue only lost entries to receives
	// posted concurrently by other goroutines of this rank: search again.
	best.mu.Lock()
	m := best.unexp.first(r)
	if m == nil {
		best.mu.Unlock()
		return in.scanLocked(r, keep)
	}
	if !keep {
		best.mu.Unlock()
	}
	return best, m
}

// peek reports the oldest unexpected message that r (a probe) accepts,
// without removing it. When none is there and register is true, r is queued
// as a blocked probe before the locks are released, so no later arrival can
// be missed.
func (in *inbox) peek(r *Request, register bool) (Status, bool, error) {
	st, m, _, err := in.find(r, register, false)
	return st, m != nil, err
}

// find is peek, and with claim it also takes the message it reports off
// its queue into its pair's claimed list (a matched probe, claim.go).
// The message and its pair are returned (non-nil) when one was found.
func (in *inbox) find(r *Request, register, claim bool) (Status, *msg, *pair, error) {
	if r.peer != AnySource {
		p := in.pairOf(r.peer)
		in.drain(p)
		p.mu.Lock()
		defer p.mu.Unlock()
		if err := in.ep.w.failure(); err != nil {
			return Status{}, nil, nil, err
		}
		if m := p.unexp.first(r); m != nil {
			return p.found(m, claim), m, p, nil
		}
		if register {
			r.in, r.pr = in, p
			p.probes = append(p.probes, r)
		}
		return Status{}, nil, nil, nil
	}
	in.drainLanes()
	in.anyMu.Lock()
	defer in.anyMu.Unlock()
	if err := in.ep.w.failure(); err != nil {
		return Status{}, nil, nil, err
	}
	if register {
		in.anyN.Add(1)
	}
	if p, m := in.scanLocked(r, true); p != nil {
		st := p.found(m, claim)
		p.mu.Unlock()
		if register {
			in.anyN.Add(-1)
		}
		return st, m, p, nil
	}
	if register {
		r.in, r.pr = in, nil
		in.anyProbes = append(in.anyProbes, r)
	}
	return Status{}, nil, nil, nil
}

// found returns the status of p's unexpected message m, which is moved to
// p.claimed when claim is set. p.mu is held.
func (p *pair) found(m *msg, claim bool) Status {
	if claim {
		p.unexp.remove(m)
		p.claimed = append(p.claimed, m)
	}
	return m.status()
}

func (m *msg) status() Status {
	return Status{Source: m.src, Tag: m.tag, Count: m.len()}
}

// len is the payload's length in bytes.
func (m *msg) len() int {
	if m.remote != nil {
		return m.size
	}
	return len(m.data)
}

// unqueue removes r (a posted receive, a blocked probe or a queued
// rendezvous send) from the queue it waits in. It reports false when r is
// not queued (it matched already, or was never queued).
func (in *inbox) unqueue(r *Request) bool {
	if r.kind == KindRecv && r.pr == nil || r.kind == KindProbe && r.pr == nil {
		in.anyMu.Lock()
		defer in.anyMu.Unlock()
		if r.in != in {
			return false
		}
		if r.kind == KindProbe {
			for i, x := range in.anyProbes {
				if x == r {
					in.anyProbes = append(in.anyProbes[:i], in.anyProbes[i+1:]...)
					in.anyN.Add(-1)
					return true
				}
			}
			return false
		}
		if in.anyPosted.delete(r) {
			in.anyN.Add(-1)
			return true
		}
		return false
	}
	p := r.pr
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.in != in || r.pr != p {
		return false
	}
	switch r.kind {
	case KindProbe:
		for i, x := range p.probes {
			if x == r {
				p.probes = append(p.probes[:i], p.probes[i+1:]...)
				return true
			}
		}
	case KindRecv:
		return p.posted.delete(r)
	case KindSend:
		for m := p.unexp.head; m != nil; m = m.next {
			if m == r.queued() && m.sreq == r {
				p.unexp.remove(m)
				freeMsg(m)
				return true
			}
		}
		if m := r.queued(); m != nil && m.sreq == r && p.unclaim(m, ErrDeadlock) {
			return true
		}
	}
	return false
}
