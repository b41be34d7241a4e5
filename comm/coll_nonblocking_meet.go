package comm

import (
	"fmt"
	"sync"

	"github.com/mpgo/mpgo/comm/internal/coll"
	"github.com/mpgo/mpgo/comm/internal/engine"
)

// Non-blocking collectives that meet in a table.
//
// Where every member of a communicator runs in this process and it has
// a table (the world communicator of such a world from the start, any
// other once a blocking collective set its shared memory up), the
// members' non-blocking collectives meet in that table instead of each
// starting a goroutine on a private communicator at once: the k-th call
// of every member lands in the table's k-th meeting (members call
// collectives in the same order), with its arguments and its request,
// and returns. The last member to arrive settles the meeting:
//
//   - When every member's call can complete in the table (a barrier, a
//     short broadcast, allreduce, allgather, alltoall, reduce, gather,
//     scatter, reduce-scatter, scan or exscan: nbFast), it agrees on the arguments as the other forms do
//     (coll_agree.go: the same checks, the same sentinels), takes every
//     member's request off its queue, does the
//     operation for all of them — their buffers belong to the operation
//     until their requests complete — and completes the requests. No
//     goroutine is started and nobody is woken but the members already
//     waiting; an 8-byte Iallreduce on 2 to 8 ranks cost 10–56 µs with
//     a goroutine each, the blocking Allreduce 0.4–3.7.
//   - Otherwise (a long vector, another collective, a member whose
//     arguments ask for another algorithm), it starts every member's
//     operation as the other non-blocking collectives run: on a goroutine
//     of that member's rank, on its private communicator. A member whose
//     call cannot complete in the table thus never waits for one that
//     could, and mismatched calls fail as they do elsewhere.
//
// A member's request is an ordinary posted receive (doneRequest), so an
// abort or the deadlock detector fails it as any other while the meeting
// waits for its last member; the last arriver takes every request before
// it touches a buffer, and when one was failed first, fails the others
// with that error without touching any. Whether a call meets in the
// table depends on the communicator alone (its table exists: every
// member's k-th call sees the same), never on the call's arguments, so
// every member of a call takes the same path.

// nbTable is a communicator's meetings, shared by its members.
type nbTable struct {
	mu    sync.Mutex
	ring  [nbRing]*nbMeet    // meetings by the members' call count, modulo nbRing
	calls map[uint64]*nbMeet // by the call count, those whose ring slot was taken
	free  []*nbMeet          // settled meetings, to reuse
	kids  map[uint64]*nbKid  // tables of children not every member took yet (nbLink)
}

// nbRing is how many meetings in flight at once the table finds by
// index; more (a member that started many calls the others have not
// reached) go to a map. With a map only, its operations were a fifth of
// the samples in a CPU profile of short Ibarriers; by index, an 8-byte
// Iallgather on 2 ranks went from 2.37 to 2.03 µs (medians of 3), the
// others within noise.
const nbRing = 32

// nbMeet is one non-blocking collective's meeting.
type nbMeet struct {
	seq     uint64 // the members' call count of the meeting
	arrived int
	members []nbMember // by rank
	acc     []byte     // working memory of a reduction
}

// nbMember is a member's call, as it left it in the meeting.
type nbMember struct {
	c     *Comm
	what  string
	sig   collSig
	op    Op
	local error // the member's own argument error
	fast  nbFast
	r     *engine.Request
	kid   uint32 // c.kids of the call: its private communicator's
	// The operation on the private communicator p, waiting quietly or
	// not (runNB), as runOn runs it: slow (a persistent collective's,
	// made once), else run on a call that agrees on the arguments first
	// (startNB's), else f on p's collective state, shared memory as the
	// communicator's (startNBCallIn's). Kept apart, not in one closure
	// made per call, which was a fifth of what a short Ibarrier allocated.
	// started: the member started it at once, as its call cannot
	// complete in the table.
	slow    func(p *Comm, quiet bool) error
	run     func(x *collCall)
	f       func(p *Comm) error
	shared  bool
	started bool
	pl      *plan // the persistent collective whose start this is, when it can complete in the table
}

// nbFast describes a call that can complete in the table; ok false
// means it cannot.
type nbFast struct {
	ok         bool
	send, recv []byte // the call's buffers (Ibcast's in recv; Iallgather's send, in place, its own block of recv)
}

// nbCall is what a call brings to its meeting besides the operation on
// its private communicator: what it must agree on with the others, its
// op, its own argument error, and whether and how it completes in the
// table.
type nbCall struct {
	sig   collSig
	op    Op
	local error
	fast  nbFast
}

// bcastCall is Ibcast's and BcastInit's nbCall.
func (c *Comm) bcastCall(what string, buf []byte, t Type, root int) nbCall {
	return nbCall{sig: collSig{kind: kBcast, root: root, t: t, n: len(buf)}, local: whole(what, "buffer", buf, t),
		fast: nbFast{ok: len(buf) < nbSharedMin && !c.pinned(coll.Bcast), recv: buf}}
}

// allreduceCall is Iallreduce's and AllreduceInit's nbCall: the checks of
// Allreduce.
func (c *Comm) allreduceCall(what string, send, recv []byte, t Type, op Op) nbCall {
	return nbCall{sig: collSig{kind: kAllreduce, t: t, n: len(send)}, op: op, local: reduceArgs(what, send, recv, t, true),
		fast: nbFast{ok: len(send) < nbSharedMin && !c.pinned(coll.Allreduce), send: send, recv: recv}}
}

// allgatherCall is Iallgather's and AllgatherInit's nbCall: the checks of
// Allgather.
func (c *Comm) allgatherCall(what string, send, recv []byte, t Type) nbCall {
	send, _, local := c.allgatherArgs(what, send, recv, t)
	k := len(send)
	return nbCall{sig: collSig{kind: kAllgather, t: t, n: k}, local: local,
		fast: nbFast{ok: c.size*k < nbSharedMin && !c.pinned(coll.Allgather), send: send, recv: recv}}
}

// alltoallCall is Ialltoall's and AlltoallInit's nbCall: the checks of
// Alltoall. In place,
// it does not complete in the table (a member's blocks would be
// overwritten before the others read them).
func (c *Comm) alltoallCall(what string, send, recv []byte, t Type) nbCall {
	return nbCall{sig: collSig{kind: kAlltoall, t: t, n: len(send)}, local: c.alltoallArgs(what, send, recv, t),
		fast: nbFast{ok: len(send) < nbSharedMin && !same(send, recv) && !c.pinned(coll.Alltoall), send: send, recv: recv}}
}

// reduceCall is Ireduce's and ReduceInit's nbCall: the checks of Reduce.
func (c *Comm) reduceCall(what string, send, recv []byte, t Type, op Op, root int) nbCall {
	return nbCall{sig: collSig{kind: kReduce, root: root, t: t, n: len(send)}, op: op, local: reduceArgs(what, send, recv, t, c.rank == root),
		fast: nbFast{ok: len(send) < nbSharedMin && !c.pinned(coll.Reduce), send: send, recv: recv}}
}

// gatherCall is Igather's nbCall: the checks of Gather. In place, the
// root's send is its own block of recv.
func (c *Comm) gatherCall(what string, send, recv []byte, t Type, root int) nbCall {
	send, _, local := c.gatherArgs(what, send, recv, t, root)
	k := len(send)
	return nbCall{sig: collSig{kind: kGather, root: root, t: t, n: k}, local: local,
		fast: nbFast{ok: c.size*k < nbSharedMin && !c.pinned(coll.Gather), send: send, recv: recv}}
}

// scatterCall is Iscatter's nbCall: the checks of Scatter. In place, the
// root's recv is its own block of send.
func (c *Comm) scatterCall(what string, send, recv []byte, t Type, root int) nbCall {
	recv, _, local := c.scatterArgs(what, send, recv, t, root)
	return nbCall{sig: collSig{kind: kScatter, root: root, t: t, n: len(recv)}, local: local,
		fast: nbFast{ok: c.size*len(recv) < nbSharedMin && !c.pinned(coll.Scatter), send: send, recv: recv}}
}

// reduceScatterCall is IreduceScatterBlock's nbCall: the checks of
// ReduceScatterBlock. In place, send and recv are the whole vector, and
// the caller's block goes to its start.
func (c *Comm) reduceScatterCall(what string, send, recv []byte, t Type, op Op) nbCall {
	_, local := c.reduceScatterArgs(what, send, recv, t)
	return nbCall{sig: collSig{kind: kReduceScatter, t: t, n: len(send)}, op: op, local: local,
		fast: nbFast{ok: len(send) < nbSharedMin && !c.pinned(coll.ReduceScatter), send: send, recv: recv}}
}

// scanCall is Iscan's and Iexscan's nbCall: the checks of Scan.
func (c *Comm) scanCall(what string, send, recv []byte, t Type, op Op, exclusive bool) nbCall {
	local := reduceArgs(what, send, recv, t, true)
	kind := kScan
	if exclusive {
		kind = kExscan
	}
	return nbCall{sig: collSig{kind: kind, t: t, n: len(send)}, op: op, local: local,
		fast: nbFast{ok: len(send) < nbSharedMin && !c.pinned(coll.Scan), send: send, recv: recv}}
}

// nbTable returns the table c's non-blocking collectives meet in, nil
// where they do not (see above). The world communicator of a world whose
// ranks all run here has one from the start, kept by the world; the
// others get theirs with their shared-memory table, and one made by Dup
// or Split of a communicator that had a table has one before that,
// found through its parent's (nbLink). Each member switches from the
// latter to the former at the same point of its calls (its first
// shared-memory collective on c), so every member's k-th call still
// meets in one table.
func (c *Comm) nbTable() *nbTable {
	if c.size == 1 || c.ct != nil {
		return nil
	}
	if c.ctx == worldContext {
		if !c.sharedMemory() {
			return nil
		}
		return c.ep.World().Shared(func() any { return new(nbTable) }).(*nbTable)
	}
	st := c.state()
	switch {
	case st.private:
		return nil
	case st.shm != nil:
		return st.shm.nb
	case st.nbl != nil:
		if st.nbl.t == nil {
			st.nbl.t = st.nbl.parent.child(st.nbl.key, c.size)
		}
		return st.nbl.t
	}
	return nil
}

// nbLink is how a communicator that Dup or Split made of one with a
// table finds its own table before it has a shared-memory one: its
// members need not communicate, as Dup does not, yet must meet in one
// table. The parent's table keeps the child's under the child's context
// (distinct for every child, and for every group of a Split) until each
// of its members took it.
type nbLink struct {
	parent *nbTable
	key    uint64
	t      *nbTable // once taken
}

// linkNB gives d, which c made without a shared-memory table of its own,
// a table through c's, where c has one (nbLink). Every member of c makes
// d at the same point of its calls, so every member does alike.
func (c *Comm) linkNB(d *Comm) {
	if d == nil || d.size == 1 {
		return
	}
	if t := c.nbTable(); t != nil {
		d.state().nbl = &nbLink{parent: t, key: d.ctx}
	}
}

// child returns the table of t's child communicator key of n members,
// making it for the first member to ask; the n-th forgets it.
func (t *nbTable) child(key uint64, n int) *nbTable {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.kids[key]
	if k == nil {
		if t.kids == nil {
			t.kids = make(map[uint64]*nbKid)
		}
		k = &nbKid{t: new(nbTable)}
		t.kids[key] = k
	}
	if k.seen++; k.seen == n {
		delete(t.kids, key)
	}
	return k.t
}

// nbKid is a child's table in its parent's, and how many of its members
// took it.
type nbKid struct {
	t    *nbTable
	seen int
}

// meetNB starts a non-blocking collective in table t: it leaves m, the
// call (its what, sig, op, local, fast and operation filled in), in its
// meeting and, when it arrived last, settles the meeting.
func (c *Comm) meetNB(t *nbTable, m *nbMember) (*Request, error) {
	c.kids++
	m.c, m.kid = c, c.kids
	var p *Comm // the private communicator, where the call runs there at once
	q := c      // the communicator the request is posted on
	if !m.fast.ok {
		p = c.nbComm(m.what, m.kid)
		q = p
	}
	r, err := q.doneRequest(m.what)
	if err != nil {
		return nil, err
	}
	m.r, m.started = r, p != nil
	c.meet(t, m)
	if p != nil {
		// It runs as the other non-blocking collectives do, from now on
		// (and in Wait, if the rank comes there first: runNB).
		mm := *m
		c.runNB(r, func(quiet bool) error { return mm.runOn(p, quiet) })
	}
	return user(r), nil
}

// runOn runs m's operation on its private communicator p (see nbMember),
// waiting quietly or not, and returns its outcome.
func (m *nbMember) runOn(p *Comm, quiet bool) error {
	switch {
	case m.slow != nil:
		return m.slow(p, quiet)
	case m.run != nil:
		x := p.coll().newCall(m.what, m.sig.t, m.op, quiet)
		x.Fail(m.local)
		x.agreeOn(m.what, m.sig)
		m.run(x)
		return x.Result()
	}
	p.cst = &collState{local: -1, hierSeen: true, quiet: quiet, private: true, shared: m.shared}
	return m.f(p)
}

// meet leaves m, the caller's next collective call, in its meeting in t,
// and settles the meeting when m was its last member.
func (c *Comm) meet(t *nbTable, m *nbMember) {
	st := c.state()
	seq := st.nbSeq
	st.nbSeq++
	if e := t.arrive(seq, c.rank, c.size, m); e != nil {
		e.settle()
		t.release(e)
	}
}

// arrive leaves m, rank's call number seq, in its meeting, and returns
// the meeting when m was its last member (it is then out of the table).
func (t *nbTable) arrive(seq uint64, rank, n int, m *nbMember) *nbMeet {
	t.mu.Lock()
	defer t.mu.Unlock()
	slot := &t.ring[seq%nbRing]
	e := *slot
	if e == nil || e.seq != seq {
		e = t.calls[seq] // nil in a nil map
	}
	if e == nil {
		if k := len(t.free); k > 0 {
			e, t.free = t.free[k-1], t.free[:k-1]
		} else {
			e = &nbMeet{members: make([]nbMember, n)}
		}
		e.seq = seq
		if *slot == nil {
			*slot = e
		} else {
			if t.calls == nil {
				t.calls = make(map[uint64]*nbMeet)
			}
			t.calls[seq] = e
		}
	}
	e.members[rank] = *m
	if e.arrived++; e.arrived < n {
		return nil
	}
	if *slot == e {
		*slot = nil
	} else {
		delete(t.calls, seq)
	}
	return e
}

// release hands back e, settled, for a later meeting.
func (t *nbTable) release(e *nbMeet) {
	clear(e.members)
	e.arrived = 0
	t.mu.Lock()
	t.free = append(t.free, e)
	t.mu.Unlock()
}

// settle ends a meeting that every member reached (see above).
func (e *nbMeet) settle() {
	ms := e.members
	for i := range ms {
		if !ms[i].fast.ok {
			// Some member runs the operation on the private
			// communicator: so do the others, which waited here.
			for i := range ms {
				if !ms[i].started {
					m := ms[i] // a copy: the meeting is reused once settled
					m.c.ep.Help(func() { m.r.Retract(m.runOn(m.c.nbComm(m.what, m.kid), true)) })
				}
			}
			return
		}
	}
	if e.disagree() {
		return
	}
	for i := range ms {
		if !ms[i].r.Take() {
			e.broken(i)
			return
		}
	}
	e.run()
	e.link() // before any member's request completes: see link
	for i := range ms {
		ms[i].r.Complete(engine.Status{}, nil)
	}
}

// disagree checks the members' arguments against each other as
// agreeOn does, and when they do not agree, fails every member's request
// with the error the other forms give it; it reports whether it did.
func (e *nbMeet) disagree() bool {
	ms := e.members
	bad := -1
	var lo, hi [4]int64
	for i := range ms {
		s := ms[i].sig
		f := [4]int64{int64(s.kind &^ (kDirect | kStaged)), int64(s.root), s.t.ident(), int64(s.n)}
		for j, v := range f {
			if i == 0 || v < lo[j] {
				lo[j] = v
			}
			if i == 0 || v > hi[j] {
				hi[j] = v
			}
		}
		if bad < 0 && ms[i].local != nil {
			bad = i
		}
	}
	var fail func(m *nbMember) error
	switch {
	case bad >= 0:
		fail = func(m *nbMember) error {
			if m.local != nil {
				return m.local
			}
			return fmt.Errorf("comm: %s: rank %d: %w", m.what, bad, codeErr(errCode(ms[bad].local)))
		}
	case lo[0] != hi[0]:
		fail = func(m *nbMember) error {
			return fmt.Errorf("comm: %s: ranks call different collectives: %w", m.what, ErrArg)
		}
	case lo[1] != hi[1]:
		fail = func(m *nbMember) error {
			return fmt.Errorf("comm: %s: ranks name roots %d to %d: %w", m.what, lo[1], hi[1], ErrArg)
		}
	case lo[2] != hi[2]:
		fail = func(m *nbMember) error {
			return fmt.Errorf("comm: %s: ranks pass %v and %v: %w", m.what, identName(lo[2]), identName(hi[2]), ErrType)
		}
	case lo[3] != hi[3]:
		fail = func(m *nbMember) error {
			return fmt.Errorf("comm: %s: ranks pass %d to %d bytes: counts differ between ranks: %w", m.what, lo[3], hi[3], ErrTruncate)
		}
	default:
		return false
	}
	for i := range ms {
		ms[i].r.Retract(fail(&ms[i]))
	}
	return true
}

// broken fails the requests of a meeting whose member i's request was
// failed first, by an abort or the deadlock detector (nothing else
// completes it), with that cause; the requests of members before i are
// taken already. No buffer is touched: a member whose request failed may
// have gone on with its buffers. Nor is member i's request read: a
// persistent collective's (pooled) may be recycled by now.
func (e *nbMeet) broken(i int) {
	ms := e.members
	cause := ms[i].c.ep.Err()
	if cause == nil {
		cause = ErrDeadlock
	}
	for j := range ms {
		if j == i {
			continue
		}
		err := fmt.Errorf("comm: %s: rank %d's call failed first: %w", ms[j].what, i, cause)
		if j < i {
			ms[j].r.Complete(engine.Status{}, err)
		} else {
			ms[j].r.Retract(err)
		}
	}
}

// run does the operation of a meeting whose members agree, for all of
// them; every request is taken.
func (e *nbMeet) run() {
	ms := e.members
	s := ms[0].sig
	switch s.kind {
	case kBcast:
		src := ms[s.root].fast.recv
		for i := range ms {
			if i != s.root {
				copy(ms[i].fast.recv, src)
			}
		}
	case kAllreduce, kReduce:
		acc := e.fold(s.n)
		if s.kind == kReduce {
			copy(ms[s.root].fast.recv, acc)
			return
		}
		for i := range ms {
			copy(ms[i].fast.recv, acc)
		}
	case kScan, kExscan: // in rank order; in place, a member's send is read before its recv is written
		if cap(e.acc) < 2*s.n {
			e.acc = alignedBytes(2 * s.n)
		}
		acc, prev := e.acc[:s.n], e.acc[s.n:2*s.n]
		copy(acc, ms[0].fast.send)
		if s.kind == kScan {
			copy(ms[0].fast.recv, acc)
		}
		op := ms[0].op
		for i := 1; i < len(ms); i++ {
			if s.kind == kExscan {
				copy(prev, acc)
			}
			op(acc, ms[i].fast.send)
			if s.kind == kExscan {
				copy(ms[i].fast.recv, prev)
			} else {
				copy(ms[i].fast.recv, acc)
			}
		}
	case kReduceScatter: // the whole vector first: in place, a member's output overwrites its input
		acc := e.fold(s.n)
		k := s.n / len(ms)
		for i := range ms {
			copy(ms[i].fast.recv[:k], acc[i*k:(i+1)*k])
		}
	case kGather: // s.n bytes a block; in place, the root's send is its own block
		dst := ms[s.root].fast.recv
		for j := range ms {
			if b := dst[j*s.n : (j+1)*s.n]; !same(b, ms[j].fast.send) {
				copy(b, ms[j].fast.send)
			}
		}
	case kScatter: // s.n bytes a block; in place, the root's recv is its own block
		src := ms[s.root].fast.send
		for j := range ms {
			if b := src[j*s.n : (j+1)*s.n]; !same(b, ms[j].fast.recv) {
				copy(ms[j].fast.recv, b)
			}
		}
	case kAllgather: // s.n bytes a block; in place, a member's send is its own block of recv
		for i := range ms {
			for j := range ms {
				if dst := ms[i].fast.recv[j*s.n : (j+1)*s.n]; !same(dst, ms[j].fast.send) {
					copy(dst, ms[j].fast.send)
				}
			}
		}
	case kAlltoall: // never in place (alltoallCall)
		k := s.n / len(ms)
		for i := range ms {
			for j := range ms {
				copy(ms[i].fast.recv[j*k:(j+1)*k], ms[j].fast.send[i*k:(i+1)*k])
			}
		}
	}
}

// fold reduces the members' sends, n bytes each, in rank order, into the
// meeting's working memory, which it returns (before writing any output:
// in place, an output may be an input).
func (e *nbMeet) fold(n int) []byte {
	if cap(e.acc) < n {
		e.acc = alignedBytes(n)
	}
	acc := e.acc[:n]
	ms := e.members
	copy(acc, ms[0].fast.send)
	for i := 1; i < len(ms); i++ {
		ms[0].op(acc, ms[i].fast.send)
	}
	return acc
}

// nbComm makes the private communicator of c's non-blocking collective
// what, c's kid-th child (as Dup's are derived: every member derives the
// same one).
func (c *Comm) nbComm(what string, kid uint32) *Comm {
	p := newComm(c.ep, childContext(c.ctx, kid, colorNonBlocking), c.rank, c.size, c.ranks, fmt.Sprintf("%s.%s%d", c, what, kid))
	p.shareLife(c)
	return p
}

// pinned reports whether the caller pinned an algorithm for k
// (SetAlgorithm): its non-blocking form then runs it, not the table.
func (c *Comm) pinned(k coll.Collective) bool {
	return coll.Algorithm(c.state().algs[k]) != coll.Auto
}
