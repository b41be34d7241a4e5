package engine

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// A pair's lane: a ring of cache-line cells through which a sender of this
// process hands small eager messages to a receiving rank, without the
// pair's lock, while that rank is active on the pair.
//
// The protocols of protocol.go share the pair's lock between the sender,
// which matches and copies under it, and the receiver, which posts under
// it: in a message-rate loop (osu_bw: one rank posts a window of
// receives and waits, the other sends a window) the two ranks run on two
// cores and every message moves the lock, the queue and the request
// between their caches (Mutex.Lock's spinning alone was 14% of a profile
// of osu_bw of 8 bytes). Shared-memory MPIs match at the receiver
// instead: the sender writes the message into a ring of the pair, and the
// receiver reads it out and matches it when it next calls the library. A
// lane does that while the receiving rank is active on the pair:
//
//   - active counts the goroutines of the receiving rank that spin (on a
//     core of their own) waiting for a receive or a probe on the pair, plus
//     armBit while the pair is armed: the rank posted a receive on it
//     while another was posted there, or waited for a receive on it
//     small enough for the lane while the sender ran on another P
//     (Request.watched), and none of its goroutines has slept in the
//     engine since. A sender whose message fits a lane (standard mode,
//     an eager payload of its own buffer that the lane carries: up to
//     laneMax bytes, laneFar while the lane is far)
//     writes it into the lane while active is not zero, completes its
//     send at once, and touches nothing else of the pair.
//   - The consumer of a lane is whoever holds the pair's lock: drainLocked
//     matches each of its messages as an arrival (matchLocked: into the
//     oldest posted receive that accepts it, or a queued eager copy), in
//     the lane's order. Whatever adds to the pair's unexpected queue
//     drains its lane first (the sender's other protocols, in arrive), so
//     a lane's messages are always newer than every message queued there,
//     and MPI's order per pair holds across the lane and the other
//     protocols. A post therefore need not drain (a message it finds
//     queued is the oldest it accepts; the lane's meet it posted, straight
//     into its buffer), while a probe, a cancel and the tests of a request
//     (Test, Ready) do, and a receive or probe naming AnySource drains
//     every lane of the inbox, in arrival order (drainAll).
//   - A lane never keeps a message from a receiver that waits for it
//     without calling the engine again:
//     a sender that wrote a message reads active again, and drains the
//     lane itself when it finds zero; a poller that stops spinning lowers
//     active and drains, and a goroutine of the rank about to sleep (park, a collective's
//     gate, a helper's quiet wait, WaitContext) disarms every lane of its
//     rank (Endpoint.blockIn), each followed by a drain. These are
//     sequentially consistent atomics (a store, then a load of the
//     other's word), so at least one side sees the other's store. A
//     post arms only while none of its rank's goroutines sleeps (it
//     disarms again if one began to, by the same pairing of a store and
//     a load), and never on a rank that asked for a Done channel (which
//     its goroutines may wait on outside the engine): so a message the
//     rank waits for is never left in an armed lane, which is what Done
//     channels, WaitAny and the deadlock detector rely on. A rank that
//     posted and then computes leaves the lane's messages there until it
//     next calls the engine, as an MPI process leaves them in its
//     shared-memory rings.
//   - Delivery into a receive happens under the pair's lock, from the
//     lane's cell (the cell is reused only once the drain has freed it):
//     a copy of at most laneMax bytes and the receive's completion, as a
//     blocked probe is completed under it. A receive through a Sink,
//     which must run with no engine lock held, gets a pooled copy instead,
//     delivered after the locks are released.
//   - A message in a lane is an eager copy its sender no longer waits for;
//     the lane is its eager buffer (protocol.go) until it is drained, so
//     the pair may hold up to a lane's worth beyond Config.EagerBuffer.
//
// Cells: the producer writes a record's payload and header, then its
// header cell's stamp (the record's position plus one), last; the
// consumer reads the cell at its tail once that stamp is there. A record
// of more than one cell continues into the next ones, whose stamp words
// hold payload; the consumer clears them when it frees them, so that a
// stamp word only ever holds zero or a stamp a header at that index
// wrote, never a later position's. A record does not wrap: one that would
// is preceded by a skip record to the end of the ring. (The same cells as
// backend/shm's rings between processes, in one process's memory.)
//
// Lanes exist in worlds of at most laneRanks ranks, and between ranks of
// this process; a pair gets one the first time its receiver posts a
// second receive on it, or waits for one a lane carries in a world whose
// waiters spin.
type lane struct {
	// The producer's: the sending rank's goroutines, one at a time.
	mu    sync.Mutex
	head  uint64 // the next cell to write
	limit uint64 // head may reach limit without reading tail (tail + laneCells, as last read)
	_     [cacheLine - 24]byte

	// The consumer's: whoever holds the pair's lock.
	tail  atomic.Uint64 // the next cell to read; those before it are free
	laned uint64        // messages drained, for tests (Endpoint.Laned)
	_     [cacheLine - 16]byte

	// active counts the goroutines of the receiving rank spinning on the
	// pair (laneCond.spinning), plus armBit while the pair is armed.
	active atomic.Int32
	_      [cacheLine - 4]byte

	// xfer averages, in nanoseconds, how long the producer's stores of
	// a record's header cell took, sampled once a lap of the ring while
	// the consumer runs on another P (near). Written by the producer,
	// read by the consumer's waits.
	xfer atomic.Int64
	_    [cacheLine - 8]byte

	cells [laneCells]laneCell
}

// laneCell is one cell; as a record's header, its fields describe the
// message and its payload starts at data, continuing into the next cells.
type laneCell struct {
	stamp atomic.Uint64 // the record's position + 1, stored last
	ctx   uint64
	tag   int64
	seq   uint64 // the message's arrival number in its receiver's inbox (match.go's seq)
	src   int32  // the sender's rank in the communicator
	n     uint16
	typ   Type
	skip  bool // a skip record: n cells to the end of the ring, no message
	data  [laneInline]byte
}

const (
	cacheLine = 64
	// laneCells: 16 KiB a lane, a window of osu_bw's 64 small messages
	// four times, or 15 records of 1 KiB (17 cells each). With 64 cells,
	// osu_bw of 1 KiB through lanes (3 records in a ring) ran at 3.9-4.0
	// GB/s, below the pair's protocol (4.5-5.1); with 256, 5.8-7.0.
	laneCells  = 256
	laneInline = cacheLine - 40
	// laneMax is the largest payload a lane carries: messages whose cost
	// is the engine's per message more than their copies. Up to 1 KiB,
	// two copies through a lane's cells, which the hardware streams from
	// one core to the other, beat ranks that share one P: a ping-pong of
	// 512 bytes and 1 KiB took 0.17-0.18 and 0.18-0.21 us one way
	// (MPICH 0.175 and 0.186) against 0.22-0.25 and 0.23-0.26. At 2 KiB
	// the lane still wins the ping-pong (0.20-0.22 against 0.24) but
	// loses the window: osu_bw 7.7-8.0 GB/s against 9.8-10.1 through the
	// pair, whose sender copies straight into the posted receive.
	laneMax = 1024
	// laneFar is the largest payload a lane carries while it is far
	// (near): where a cache line takes long to cross between the cores,
	// each line of a record costs, and osu_bw of 512 bytes and 1 KiB
	// through lanes ran at 1.5-1.7 and 2.9-3.1 GB/s against 1.8-1.9 and
	// 3.7-3.9 through the pair (the VM's slow state, a line's trip 270
	// ns).
	laneFar = 256
	// armBit is active's bit for an armed lane.
	armBit = 1 << 24
	// laneRanks is the largest world whose pairs get lanes: at most
	// laneRanks² lanes of 16 KiB, for pairs whose receivers are active.
	laneRanks = 64
)

// cellsFor returns how many cells a record of n payload bytes takes.
func cellsFor(n int) uint64 {
	if n <= laneInline {
		return 1
	}
	return 1 + uint64(n-laneInline+cacheLine-1)/cacheLine
}

// payload returns the n payload bytes of the record whose header is cell i.
func (l *lane) payload(i uint64, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&l.cells[i].data[0])), n)
}

// write writes payload buf of the record whose header is cell i: its
// continuation cells first, the header's inline bytes last, so that put
// then stores the header's fields and stamp in one go (a consumer polling
// the header's line would otherwise take it back between the header's
// stores and the stamp's: a 64-byte ping-pong took 0.26-0.30 us one way
// in some runs against 0.16-0.17 in others). The stamp words of the
// continuation cells are stored by storeWord: ready reads the word at
// the tail with no lock, and a tail it read a moment ago may be a
// continuation cell again. Where storeWord is a plain store
// (plainWords), the continuation cells are one copy: written cell by
// cell (a copy of 8 bytes and one of 56), a 1 KiB record took 17 small
// copies, and a ping-pong through a lane took 0.24-0.25 us one way
// against 0.18-0.21 in one copy (512 bytes: 0.20-0.21 against
// 0.17-0.18; 2 goroutine ranks, mpbench latency, the VM's fast state).
func (l *lane) write(i uint64, buf []byte) {
	n := min(len(buf), laneInline)
	if plainWords && n < len(buf) {
		rest := unsafe.Slice((*byte)(unsafe.Pointer(&l.cells[i+1])), (cellsFor(len(buf))-1)*cacheLine)
		copy(rest, buf[n:])
		n = len(buf)
	}
	for j := i + 1; n < len(buf); j++ {
		c := &l.cells[j]
		var w [8]byte
		n += copy(w[:], buf[n:])
		storeWord(&c.stamp, *(*uint64)(unsafe.Pointer(&w))) // the bytes as they lie in memory
		rest := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(c), 8)), cacheLine-8)
		n += copy(rest, buf[n:])
	}
	copy(l.cells[i].data[:], buf)
}

// put writes message m (its envelope and payload, m.data) into l, the
// lane of a pair of in, and reports whether it did: false when l has no
// room.
func (l *lane) put(in *inbox, m *msg) bool {
	buf := m.data
	k := cellsFor(len(buf))
	l.mu.Lock()
	h := l.head
	i := h % laneCells
	var pad uint64
	if i+k > laneCells {
		pad = laneCells - i
	}
	if h+pad+k > l.limit {
		l.limit = l.tail.Load() + laneCells
		if h+pad+k > l.limit {
			l.mu.Unlock()
			return false
		}
	}
	if pad > 0 {
		c := &l.cells[i]
		c.skip, c.n = true, uint16(pad)
		c.stamp.Store(h + 1)
		h, i = h+pad, 0
	}
	seq := in.seq.Add(1) // it arrives now, for AnySource's order across pairs; under l.mu: in the lane's order
	l.write(i, buf)      // its header's line last, at once: a consumer that polls it takes it back once
	var t0 int64
	sample := i == 0 && in.ep.onOtherP() // once a lap: the time of the header's stores (near)
	if sample {
		t0 = nanotime()
	}
	c := &l.cells[i]
	c.ctx, c.tag, c.src, c.n, c.typ, c.skip, c.seq = m.ctx, int64(m.tag), int32(m.src), uint16(len(buf)), m.typ, false, seq
	c.stamp.Store(h + 1)
	if sample {
		x := l.xfer.Load()
		d := min(nanotime()-t0, 2*nearXfer) // a preemption or an interrupt counts as one far sample
		l.xfer.Store(x + (d-x)/4)
	}
	l.head = h + k
	l.mu.Unlock()
	return true
}

// ready reports whether l holds a record (a hint, read with no lock).
func (l *lane) ready() bool {
	t := l.tail.Load()
	return l.cells[t%laneCells].stamp.Load() == t+1
}

// sendLane hands m, a standard-mode eager message from this rank, to its
// receiver's lane p.lane when it may (see above) and reports whether it
// did: the send is complete then.
func (ep *Endpoint) sendLane(in *inbox, p *pair, m *msg) bool {
	return p.lane.Load() != nil && ep.sendLaned(in, p, m) // inlined: most pairs have no lane
}

// sendLaned is sendLane on a pair with a lane.
func (ep *Endpoint) sendLaned(in *inbox, p *pair, m *msg) bool {
	l := p.lane.Load()
	if l.active.Load() == 0 || !l.carries(len(m.data)) || ep.w.state.Load() != stateRunning || in.anyN.Load() != 0 {
		return false
	}
	if !l.put(in, m) {
		return false
	}
	if l.active.Load() == 0 { // the receiver left before it could see the message
		in.drain(p)
	}
	return true
}

// carries reports whether l takes a message of n payload bytes: up to
// laneMax while l is near, laneFar while it is far (near).
func (l *lane) carries(n int) bool { return n <= laneFar || n <= laneMax && l.near() }

// laneTake is a lane's message matched by a receive through a Sink,
// delivered once the locks are released.
type laneTake struct {
	r *Request
	m *msg
}

// drain matches the messages in p's lane, if any, taking the locks a
// sender takes (arrive). While AnySource receives or probes wait, it
// drains every lane of the inbox at once, in arrival order (drainAll).
func (in *inbox) drain(p *pair) {
	if p.lane.Load() != nil { // inlined: most pairs have no lane
		in.drainLane(p)
	}
}

// drainLane is drain of a pair with a lane.
func (in *inbox) drainLane(p *pair) {
	l := p.lane.Load()
	if !l.ready() {
		return
	}
	if in.anyN.Load() == 0 {
		p.mu.Lock()
		if in.anyN.Load() == 0 {
			later := in.drainLocked(p, l, false, nil)
			p.mu.Unlock()
			finishTakes(later)
			return
		}
		p.mu.Unlock()
	}
	in.drainAll()
}

// drainLanes drains every lane of in (before a receive or probe naming
// AnySource scans the pairs).
func (in *inbox) drainLanes() {
	ps := in.lanes.Load()
	if ps == nil {
		return
	}
	for _, p := range *ps {
		if p.lane.Load().ready() {
			in.drainAll()
			return
		}
	}
}

// drainAll matches the messages of every lane of in, in the order they
// arrived (their seq) across the lanes: an AnySource receive that two
// lanes' messages match takes the older one, as it would have had both
// been matched as they arrived. It holds anyMu and the locks of every
// pair with a lane (match.go's lock order: anyMu, then the pairs', which
// nobody else holds two of).
func (in *inbox) drainAll() {
	in.anyMu.Lock()
	ps := *in.lanes.Load()
	for _, p := range ps {
		p.mu.Lock()
	}
	var later []laneTake
	for {
		var next *pair
		var nextSeq uint64
		for _, p := range ps {
			if s, ok := p.lane.Load().oldest(); ok && (next == nil || s < nextSeq) {
				next, nextSeq = p, s
			}
		}
		if next == nil {
			break
		}
		later = in.drainOne(next, next.lane.Load(), true, later)
	}
	for _, p := range ps {
		p.mu.Unlock()
	}
	in.anyMu.Unlock()
	finishTakes(later)
}

// oldest returns the seq of l's oldest message, if it holds one; it
// passes over skip records. The caller is l's consumer.
func (l *lane) oldest() (uint64, bool) {
	for {
		t := l.tail.Load()
		c := &l.cells[t%laneCells]
		if c.stamp.Load() != t+1 {
			return 0, false
		}
		if !c.skip {
			return c.seq, true
		}
		l.tail.Store(t + uint64(c.n))
	}
}

// drainLocked matches the messages of lane l of p, oldest first, as
// arrivals (p.mu held, and anyMu when withAny); it appends to later the
// receives through a Sink that it matched, with a copy of their
// messages, for the caller to deliver once it released the locks.
func (in *inbox) drainLocked(p *pair, l *lane, withAny bool, later []laneTake) []laneTake {
	for {
		if _, ok := l.oldest(); !ok {
			return later
		}
		later = in.drainOne(p, l, withAny, later)
	}
}

// drainOne matches the oldest message of l, which oldest found there (as
// drainLocked), and frees its cells.
func (in *inbox) drainOne(p *pair, l *lane, withAny bool, later []laneTake) []laneTake {
	t := l.tail.Load()
	i := t % laneCells
	c := &l.cells[i]
	n := int(c.n)
	k := cellsFor(n)
	if in.ep.w.failure() == nil { // after an abort, the lane's messages are dropped, as sweep drops queued ones
		m := msg{ctx: c.ctx, src: int(c.src), tag: int(c.tag), typ: c.typ, seq: c.seq, data: l.payload(i, n)}
		r, err := in.matchLocked(p, &m, nil, withAny)
		switch {
		case err != nil || r == nil:
		case r.sink() != nil:
			q := getMsg()
			q.ctx, q.src, q.tag, q.typ = m.ctx, m.src, m.tag, m.typ
			q.eagerCopy(in.ep.w.pool, m.data)
			later = append(later, laneTake{r, q})
		default:
			take(r, &m, 0)
		}
		l.laned++
	}
	for j := i + 1; j < i+k; j++ {
		storeWord(&l.cells[j].stamp, 0) // payload that must not read as a later stamp
	}
	l.tail.Store(t + k)
	return later
}

// finishTakes delivers what drainLocked left for after the locks.
func finishTakes(later []laneTake) {
	for _, d := range later {
		take(d.r, d.m, 0)
		freeMsg(d.m)
	}
}

// laneOf returns the lane of p, creating it (for a post that arms it);
// nil where lanes are not used (a large world, a sender in another
// process).
func (in *inbox) laneOf(p *pair) *lane {
	if l := p.lane.Load(); l != nil {
		return l
	}
	if w := in.ep.w; !w.lanes || !w.isLocal(p.src) {
		return nil
	}
	in.anyMu.Lock()
	defer in.anyMu.Unlock()
	if l := p.lane.Load(); l != nil {
		return l
	}
	l := new(lane)
	var ps []*pair
	if old := in.lanes.Load(); old != nil {
		ps = append(ps, *old...)
	}
	ps = append(ps, p)
	p.lane.Store(l) // first: a pair in lanes has its lane
	in.lanes.Store(&ps)
	return l
}

// laneCond waits for a request on a pair with a lane, draining it.
type laneCond struct {
	r     *Request
	l     *lane
	armed bool // l was armed as the wait began: its sender uses it without the waiter's count
}

// cond returns the condition of a wait for r on l, which notes whether
// l is armed as the wait begins.
func (l *lane) cond(r *Request) laneCond { return laneCond{r, l, l.active.Load()&armBit != 0} }

func (c laneCond) ready() bool {
	if c.r.done() {
		return true
	}
	if c.l.ready() {
		c.r.in.drain(c.r.pr)
	}
	return c.r.done()
}

func (c laneCond) awaitedRuns(m []running) bool { return c.r.awaitedRuns(m) }

// near reports whether l's producer and consumer exchange cache lines
// quickly enough for a consumer to watch the lane (Request.watched):
// whether the producer's stores of a header cell, which the consumer
// read last, took less than nearXfer on average while the two ran on two
// Ps. Those stores wait for the line to come over from the consumer's
// core. A lane found far is not watched, so its ranks soon share a P and
// take no more samples: it stays far until a consumer that spins
// (spinFor: ranks that compute between exchanges) lets its producer
// sample again, and yields meanwhile, as every wait did before watches.
func (l *lane) near() bool { return l.xfer.Load() < nearXfer }

// onOtherP reports whether ep's rank, a lane's consumer, is marked running
// (spin.go), so on a P other than its producer's, which runs: only then
// does a sample of the producer's stores time a cache line's trip between
// two cores. (Ranks that share a P would make every sample near, and the
// watches they then try would see their peers not running.)
func (ep *Endpoint) onOtherP() bool {
	m := ep.w.running
	return m != nil && m[ep.rank].on.Load()
}

// nearXfer is where watching a lane stops paying, in nanoseconds of the
// producer's stores, averaged over the last few samples (each counted up
// to twice nearXfer). Measured on the 2-core VM, in the two states it
// switches between (a cache line's one-way trip between its cores 54 ns,
// or 260-290 ns): a sample (the stores and a clock read) took 30-60 ns
// in the first; an 8-byte ping-pong took 122-131 ns one way watched
// against 236-253 yielding in the first, and 355 watched against 250
// yielding in the second. Between those, watching pays while a trip
// takes less than about 170 ns, a sample about 125.
const nearXfer = 120

// watch polls c while the sender runs (it did as the wait began), for up
// to gateSpins rounds, and reports whether c became ready
// (Request.watched). A method of laneCond rather than generic, as
// PollWord's watch is written out: called through a generic function's
// dictionary, each round's ready is an indirect call, and the round trip
// of an 8-byte Bcast between 2 ranks was 10% slower so.
func (c laneCond) watch(m []running) bool {
	c.spinning(true)
	ok := false
	for i := 1; i <= gateSpins && !ok; i++ {
		ok = c.ready()
		if !ok && i%32 == 0 && !c.awaitedRuns(m) {
			break
		}
	}
	c.spinning(false)
	return ok
}

// spinning counts the waiter among the lane's pollers while it spins:
// then it runs on a core of its own beside its sender, the case the lane
// is for. (While it yields, its sender most likely runs on its P, in its
// place, and takes the pair's lock alone.) Not while the lane is armed:
// its sender uses it then anyway, and a count raised and lowered each
// wait would move active's line, which the sender reads before each
// message, between their cores.
func (c laneCond) spinning(on bool) {
	if c.armed {
		return
	}
	if on {
		c.l.active.Add(1)
	} else {
		c.l.active.Add(-1)
	}
}

// lane returns the lane that may hold the message r waits for: its
// pair's, for a receive or a probe queued on a pair with one; nil
// otherwise (a send's pair, a rendezvous's, is its receiver's).
func (r *Request) lane() *lane {
	if p := r.pr; p != nil && r.kind != KindSend && r.in != nil {
		return p.lane.Load()
	}
	return nil
}

// progress drains the lane of r's pair, for a test of r (Test, Ready)
// that found it not done: the lane may hold its message. It also hands
// the work its rank deferred (Endpoint.Defer: a persistent collective
// started) to its workers, as a park would: a rank that polls with Test,
// and never parks, must see the operation progress (MPI's weak progress
// makes a test a progress call).
func (r *Request) progress() {
	r.drained()
	if ep := r.ep; ep != nil {
		ep.flushDeferred()
	}
}

// drained drains the lane of r's pair, which may hold r's message, and
// reports whether r is done.
func (r *Request) drained() bool {
	if !r.done() && r.lane() != nil {
		r.in.drain(r.pr)
	}
	return r.done()
}

// arm arms p's lane, creating it, for a receive just posted on it by a
// goroutine of in's rank while another receive was posted there (a window
// of receives, as osu_bw's), or for a receive that a goroutine of in's
// rank is about to wait for (Request.watched).
func (in *inbox) arm(p *pair) {
	l := in.laneOf(p)
	if l == nil || l.active.Load()&armBit != 0 {
		return
	}
	ep := in.ep
	if ep.noArm.Load() {
		return
	}
	l.active.Or(armBit)
	if ep.sleepers.Load() > 0 || ep.noArm.Load() || ep.anyParked() { // one sleeps: it may wait for the lane's messages
		l.active.And(^armBit)
		in.drain(p)
	}
}

// disarm disarms every lane of in and drains those it disarmed.
func (in *inbox) disarm() {
	ps := in.lanes.Load()
	if ps == nil {
		return
	}
	for _, p := range *ps {
		l := p.lane.Load()
		if l.active.Load()&armBit != 0 {
			l.active.And(^armBit)
			in.drain(p)
		}
	}
}

// anyParked reports whether a goroutine of ep's rank is parked (enter).
// Its parking registered it before it disarmed the lanes (park): both
// under pmu, whose Lock and Unlock are sequentially consistent atomics,
// so an arm that finds none parked came before that disarm.
func (ep *Endpoint) anyParked() bool {
	ep.pmu.Lock()
	n := len(ep.parked)
	ep.pmu.Unlock()
	return n > 0
}

// blockIn is called by a goroutine of ep's rank about to sleep in the
// engine without registering as parked (a helper's quiet wait,
// WaitContext), blockOut once it runs again: while one sleeps, no lane
// of the rank is armed. (A goroutine that parks registers instead:
// anyParked.)
func (ep *Endpoint) blockIn() {
	ep.sleepers.Add(1)
	ep.inbox.disarm()
}

func (ep *Endpoint) blockOut() { ep.sleepers.Add(-1) }

// watched is called when a Done channel of one of ep's requests is asked
// for: its goroutines may wait on it outside the engine from now on, so
// the rank's lanes are never armed again.
func (ep *Endpoint) watched() {
	if !ep.noArm.Load() {
		ep.noArm.Store(true)
		ep.inbox.disarm()
	}
}

// Laned returns how many messages from world rank src reached ep through
// its pair's lane (for tests).
func (ep *Endpoint) Laned(src int) uint64 {
	p := ep.inbox.pairOf(src)
	l := p.lane.Load()
	if l == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return l.laned
}
