package comm

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/mpgo/mpgo/comm/internal/coll"
	"github.com/mpgo/mpgo/comm/internal/engine"
)

// The shared-memory collectives' common machinery: a table the ranks of a
// communicator share, and the gate they meet at.
//
// Invariants:
//   - One shmComm per communicator, created by rank 0 on the first
//     shared-memory collective and handed to every member by reference
//     (refBytes/fromRef) over the collective context; each member keeps it
//     in its collState.
//   - A collective publishes the caller's arguments in slots[p][rank], where
//     p is the parity of the communicator's shared-memory collectives so
//     far (the same on every member: collectives are called in the same
//     order). Only the owner writes its slot, and only before the call's
//     first gate; others read it only between that gate and their arrival
//     at the next one. Two slot sets make this safe without a gate at the
//     end of every call: a member writing slot set p again has passed a
//     gate of the call in between, which every member reached after its
//     last read of set p. Staging buffers (collState.stage) follow the same
//     rule.
//   - A slot keeps the buffers it names alive until its owner writes the
//     slot set again (two calls later) or, after a call's second gate,
//     clears them. A barrier, whose slot is empty, writes it only when
//     collState.held says it may name buffers: nobody reads a barrier's
//     slot (its signature's kind differs from any other collective's, so
//     the verdict stops a mismatched call before it reads slots).
//   - The last member to reach a call's first gate judges every slot
//     (shmVerdict: the first that disagrees with member 0's, any direct
//     bit, one length for all) before it lets the others through, so all
//     reach the same verdict on arguments that must agree and decide alike
//     whether the call has a second gate; the others read the verdict
//     once through the gate (n reads of n slots in all, not n²). A verdict
//     lives by parity, as the slots do, and for the same reason: the next
//     to write verdicts[p] is the last arriver at a first gate two calls
//     later, which every member reaches after its read.
//     A call whose ranks read each other's own buffers (direct) ends with
//     a second gate, after which nobody touches them.
//   - A slot, a signature and a verdict are stored only when their value
//     changed (shmArrive, decide): the others read them at every call,
//     and a store of the same value would take their cache lines from
//     them all the same.
//   - gate.pass is a barrier: count counts arrivals, and the last arriver
//     of generation k (the value of gen) resets count and then moves gen
//     to k+1, which opens the gate; nobody of generation k+1 can arrive
//     before that (every member must pass generation k first, and the
//     last arriver counts itself only after gen moved). A waiter polls gen
//     (yields, then spins where that pays) and, if the gate stays shut,
//     sleeps on one request, sleepers[k&1]'s, posted by a sleeper that
//     found the slot empty and won the CAS that installs it (one that lost
//     retracts its own), and completed by the last arriver (or failed by
//     an abort or the deadlock detector, which see it as an ordinary
//     posted receive). The last arriver stores gen before it takes the
//     slot, and a sleeper installs its request before it looks at gen
//     again, so either the last arriver finds the request and completes
//     it, or the sleeper sees the gate open (and takes back a request
//     nobody took). A generation k sleeper that is late leaves its
//     request in slot k&1, which generation k+1 does not use; generation
//     k+2 cannot begin before that sleeper arrived at k+1. So a gate that
//     opens before anyone sleeps (every member arriving within a poll, the
//     usual case) costs a counter and a word, and no request.
//   - A broadcast's root whose data is staged may leave a call at its
//     first gate without awaiting it (shmCall.leave): it awaits it, and
//     passes the call's second gate if the verdict gives it one, at the
//     start of its next call (settleLeft), before it writes staging, a
//     row or a slot, so that the rules above hold for it too; it alone
//     does not learn the verdict.
//   - A member that leaves a gate by an error (an abort, the deadlock
//     detector) has counted itself in a generation that has not opened:
//     a late member may still arrive last and judge that call's slots.
//     So the first such error breaks the gate (gate.broken) before the
//     member returns, and from then on every member's shared-memory
//     collective on the communicator fails before it writes a slot or
//     counts itself.

// shmComm is what the members of a communicator share.
type shmComm struct {
	self  uintptr // address of this shmComm: tells a reference from a copy
	n     int
	gate  gate
	slots [2][]shmSlot
	sigs  [2][]shmSig // what the verdict reads of every member, packed
	// verdicts, by parity like slots: written by a call's last arriver at
	// its first gate, read by every member once through it.
	verdicts [2]shmVerdict
	// The combined reductions' table (coll.Combined), by parity like
	// slots: rows holds one row of coll.CombineLimit bytes a member,
	// written by its owner before the first gate; result is written by
	// the last arriver at that gate, from the rows, and read by the
	// members once through it. Nil on a communicator too small to combine.
	rows, result [2][]byte
	// nb is where the members' non-blocking collectives and persistent
	// starts meet (coll_nonblocking_meet.go).
	nb *nbTable
}

// shmSlot is one member's arguments to the current collective.
type shmSlot struct {
	kind       collKind
	root       int
	t          Type
	n          int    // the length every member must pass alike (sameLen)
	a, b       []byte // send and receive buffers (or staged input in a)
	off, cnt   []int  // v-variants: byte offsets and lengths
	roff, rcnt []int
	err        error // a local argument error: every member fails with it
	_          [slotPad]byte
}

// sig returns what of sl every member reads (shmSig).
func (sl *shmSlot) sig() shmSig {
	return shmSig{kind: sl.kind, t: sl.t, bad: sl.err != nil, root: int32(sl.root), n: sl.n}
}

// clear empties sl, which now stands for the empty slot of sig (a
// barrier's, a combined reduction's), field by field (see shmArrive).
func (sl *shmSlot) clear(sig shmSig) {
	sl.a, sl.b, sl.off, sl.cnt, sl.roff, sl.rcnt, sl.err = nil, nil, nil, nil, nil, nil, nil
	sl.kind, sl.root, sl.t, sl.n = sig.kind, int(sig.root), sig.t, sig.n
}

// same reports whether sl and o hold the same arguments: the same
// buffers (the same memory, the same lengths), the same values, and no
// error (errors are not compared: == on some error types panics).
func (sl *shmSlot) same(o *shmSlot) bool {
	return sl.kind == o.kind && sl.root == o.root && sl.t == o.t && sl.n == o.n && sl.err == nil && o.err == nil &&
		sameSlice(sl.a, o.a) && sameSlice(sl.b, o.b) && sameSlice(sl.off, o.off) && sameSlice(sl.cnt, o.cnt) &&
		sameSlice(sl.roff, o.roff) && sameSlice(sl.rcnt, o.rcnt)
}

// sameSlice reports whether a and b are the same view of the same memory.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// empty reports whether sl names no buffer and no error: what the
// verdict reads of it is all in its signature, and its users read no
// more of it, so it need not be written.
func (sl *shmSlot) empty() bool {
	return sl.a == nil && sl.b == nil && sl.off == nil && sl.cnt == nil && sl.roff == nil && sl.rcnt == nil && sl.err == nil
}

// shmSig is the part of a slot that every member reads of every other
// (agree, sameLen, direct), in a dense array: n members read n/4 cache
// lines instead of n slots.
type shmSig struct {
	kind collKind
	t    Type
	bad  bool // the slot has an err
	root int32
	n    int
}

// slotPad keeps slots of different ranks on different cache lines (a slot
// is written by its owner while the others write theirs).
const slotPad = 32

// collKind identifies a collective (and variant) in a slot.
type collKind uint16

const (
	kBarrier collKind = iota + 1
	kBcast
	kReduce
	kAllreduce
	kGather
	kGatherv
	kScatter
	kScatterv
	kAllgather
	kAllgatherv
	kAlltoall
	kAlltoallv
	kReduceScatter
	kScan
	kExscan
	kBcastValue
	kGatherValue

	kDirect collKind = 1 << 8 // the ranks read each other's buffers: a second gate
	kStaged collKind = 1 << 9 // the input was copied to staging (a)
)

// gate is a barrier of the members of one communicator.
type gate struct {
	n      int32
	yields int  // how many times a waiter yields its P before it parks (gateYields)
	spins  bool // the world's waiters may spin (engine.Endpoint.Spins)
	count  atomic.Int32
	// broken is the error of the first pass that failed (an abort, the
	// deadlock detector): the members it failed left without the gate
	// opening, and a late arriver may still count itself in and read the
	// slots of that call, so no member may publish or count again; every
	// later shared-memory collective on the communicator fails with it.
	// Read by every arriver just before it counts itself: on count's
	// line, which the arriver takes anyway.
	broken   atomic.Pointer[error]
	_        [48]byte                   // count and broken, written by every arriver, apart from what waiters read
	gen      atomic.Uint32              // the generation: moved on by its last arriver
	sleepers [2]atomic.Pointer[gateGen] // by the parity of gen: the request its sleepers wait on
}

// failed returns the error of a communicator whose gate broke, nil if it
// did not.
func (g *gate) failed(c *Comm) error {
	if e := g.broken.Load(); e != nil {
		return brokenErr(c, *e)
	}
	return nil
}

// brokenErr is failed's error (not inlined: see collErr).
//
//go:noinline
func brokenErr(c *Comm, err error) error {
	return fmt.Errorf("comm: collective on %s, after an earlier one failed: %w", c, err)
}

// gateYields returns how many times a waiter at a gate yields its P before
// it parks, in a world whose point-to-point waits yield yields times
// (engine.pollYields while ranks fit the Ps, else none).
//
// A gate waits for every member, unlike a receive that waits for one
// peer, so one yield is worth it even when ranks outnumber Ps: it sends
// the waiter to the back of the global run queue, behind every other
// runnable rank, and when those all run to the gate (the usual case) the
// gate has opened by the time the waiter looks again. It then goes on
// without having parked, and the last arriver wakes nobody: on 100,000
// ranks one switch per rank instead of a park and a wake-up, and no close
// of a channel that readies 100,000 goroutines one after the other. A
// waiter that finds the gate still shut parks as before.
func gateYields(yields int) int { return max(1, yields) }

// gateGen is what the sleepers of one generation of a gate wait on: a
// request and its Done channel (taken once: Done locks).
type gateGen struct {
	r    *engine.Request
	done <-chan struct{}
}

// shm returns c's shared table, creating it on first use (a collective
// call: every member must reach it at the same point); the setup has a
// frame of its own (see shmArrive).
func (c *Comm) shm() (*shmComm, error) {
	if st := c.cst; st != nil && st.shm != nil {
		return st.shm, nil
	}
	return c.shmSetup()
}

// shmSetup is shm's first use on c.
//
//go:noinline
func (c *Comm) shmSetup() (*shmComm, error) {
	st := c.state()
	cc := c.coll()
	if c.rank == 0 {
		s := &shmComm{n: c.size, gate: gate{n: int32(c.size), yields: gateYields(c.ep.Yields()), spins: c.ep.Spins()}, nb: new(nbTable)}
		s.self = uintptr(unsafe.Pointer(s))
		for p := range s.slots {
			s.slots[p] = make([]shmSlot, c.size)
			s.sigs[p] = make([]shmSig, c.size)
			if coll.Combined(coll.Allreduce, coll.CombineLimit, c.size) {
				s.rows[p] = alignedBytes(c.size * coll.CombineLimit)
				s.result[p] = alignedBytes(coll.CombineLimit)
			}
		}
		ref := refBytes(s)
		for r := 1; r < c.size; r++ {
			if err := cc.SendOwned(ref, Byte, r, tagCollSetup); err != nil {
				return nil, err
			}
		}
		st.shm = s
	} else {
		b, _, err := cc.RecvOwned(Byte, 0, tagCollSetup)
		if err != nil {
			return nil, err
		}
		s := fromRef[shmComm](b)
		if s == nil || s.self != uintptr(unsafe.Pointer(s)) || s.n != c.size {
			return nil, fmt.Errorf("comm: shared-memory table from rank 0 is not one: %w", ErrArg)
		}
		st.shm = s
	}
	gc := *cc
	gc.cst = nil
	st.gateComm = &gc
	return st.shm, nil
}

// refBytes views *p as a message payload, so that a reference can be handed
// to another rank of this process with SendOwned: the payload points into
// *p, which keeps it alive, and RecvOwned gives the very same memory back.
// Used only on collective contexts (no user receive can take it) and only
// when the members share memory.
func refBytes[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// fromRef is the inverse of refBytes; nil when b has the wrong size. The
// caller checks that b is the object itself and not a copy (shmComm.self).
func fromRef[T any](b []byte) *T {
	if uintptr(len(b)) != unsafe.Sizeof(*new(T)) {
		return nil
	}
	return (*T)(unsafe.Pointer(unsafe.SliceData(b)))
}

// pass blocks until every member of the communicator has called pass (a
// call's second gate). c is the caller's communicator.
func (g *gate) pass(c *Comm) error {
	k, open, err := g.arrive(c, nil, nil)
	if err != nil || open {
		return err
	}
	return g.await(c, k)
}

// arrive counts the caller in at the gate's current generation, which it
// returns, and reports whether it opened it: it was the last to arrive,
// and decided call x (when not nil: its first gate; op as shmArrive has
// it) before it let the others through, so that what the decision
// writes every member reads once through the gate. A caller that did not
// open it awaits the generation before it reads what the decision wrote.
func (g *gate) arrive(c *Comm, x *shmCall, op Op) (k uint32, open bool, err error) {
	if err := g.failed(c); err != nil {
		return 0, false, err
	}
	k = g.gen.Load()
	if g.count.Add(1) != g.n {
		return k, false, nil
	}
	return k, true, g.open(c, k, x, op)
}

// open is arrive's part for the last arriver of generation k: the
// decision on x, then the gate opened and its sleepers woken. A frame of
// its own (not inlined), which the other arrivers' stacks do not reach
// (see shmArrive).
//
//go:noinline
func (g *gate) open(c *Comm, k uint32, x *shmCall, op Op) error {
	if x != nil {
		x.decide(op)
	}
	g.count.Store(0)
	g.gen.Store(k + 1)
	if gg := g.sleepers[k&1].Swap(nil); gg != nil && !gg.r.Retract(nil) {
		// Taken by an abort or the deadlock detector: its sleepers
		// left with that error before the gate opened, and the call
		// is broken for every member.
		<-gg.done
		if _, err := gg.r.Result(); err != nil {
			g.broken.CompareAndSwap(nil, &err)
			return fmt.Errorf("comm: collective on %s: %w", c, err)
		}
	}
	return nil
}

// await waits for generation k of the gate, in which the caller arrived,
// to open.
//
// Where ranks outnumber Ps (the world never spins), the waiter yields
// right here, so that as few frames as possible lie between the
// collective's entry and the yield: once it runs again, every cache line
// it touched before is cold (on 100,000 ranks, a hundred thousand others
// ran in between), and each frame it returns through is one more line to
// load. So the cheap collectives (a barrier, a combined reduction) await
// in their exported function, not in a callee some frames down (see
// shmArrive). In a bare barrier of 100,000 goroutines, yielding 8 frames
// of 100 bytes down took 81 ms a call against 62 at the top. On 100,000
// ranks this, with the layouts of Comm and collState (TestHotLayout),
// took Barrier from 100 to 91 ms and an 8-byte Allreduce from 142 to 103
// (medians of 3 alternated runs, 2 cores).
func (g *gate) await(c *Comm, k uint32) error {
	if g.spins {
		if c.ep.PollWord(&g.gen, k, g.yields) {
			return nil
		}
	} else if g.yield(k) {
		return nil
	}
	return g.sleep(c, k)
}

// yield is await's wait where the world never spins: it yields the P
// once (a world that never spins yields nowhere else, so gateYields
// gives its gates one) and reports whether generation k opened
// meanwhile. Small enough to be inlined (no frame of its own).
func (g *gate) yield(k uint32) bool {
	runtime.Gosched()
	return g.gen.Load() != k
}

// sleep parks the caller until generation k of the gate opens.
func (g *gate) sleep(c *Comm, k uint32) error {
	// Sleep on the generation's request: another sleeper's, or a new one.
	slot := &g.sleepers[k&1]
	var ng *gateGen
	gg := slot.Load()
	if gg == nil {
		var err error
		if ng, err = c.gateGen(); err != nil {
			g.broken.CompareAndSwap(nil, &err)
			return fmt.Errorf("comm: collective on %s: %w", c, err)
		}
		gg = ng
		if !slot.CompareAndSwap(nil, ng) {
			ng.r.Retract(nil) // another sleeper was first
			ng, gg = nil, slot.Load()
		}
	}
	if g.gen.Load() != k || gg == nil {
		// Opened meanwhile: take back a request of ours nobody took.
		if ng != nil && slot.CompareAndSwap(ng, nil) {
			ng.r.Retract(nil)
		}
		return nil
	}
	c.ep.WaitShared(gg.r, gg.done, 0)
	if _, err := gg.r.Result(); err != nil {
		g.broken.CompareAndSwap(nil, &err)
		return fmt.Errorf("comm: collective on %s: %w", c, err)
	}
	return nil
}

// gateGen posts the request of a gate generation: a receive from the
// caller itself that no message matches, so that only the gate, an abort
// or the deadlock detector completes it.
func (c *Comm) gateGen() (*gateGen, error) {
	r, err := c.state().gateComm.startRecv(nil, Byte, c.rank, tagCollGate, false, false)
	if err != nil {
		return nil, err
	}
	return &gateGen{r: r, done: r.Done()}, nil
}

// shmCall is one rank's shared-memory collective in progress.
//
// Its first fields are what a call reads once through its gate, together
// (see collState).
type shmCall struct {
	c     *Comm
	s     *shmComm
	p     uint64     // this generation's parity
	k     uint32     // the generation of the first gate
	open  bool       // the caller opened the first gate (it arrived last)
	left  bool       // the caller left the call at its first gate (leave), and ends it in its next (settleLeft)
	v     shmVerdict // what the slots say, as the last arriver at the first gate judged
	err   error      // the outcome: the same on every member where arguments must agree
	what  string
	slots []shmSlot // this generation's
	sigs  []shmSig
	me    *shmSlot
	stage []byte // this generation's staging storage of the caller
}

// reset clears what shmArrive does not set of the call before, field by
// field (see shmArrive).
func (x *shmCall) reset() {
	x.k, x.open, x.v, x.err, x.stage = 0, false, shmVerdict{}, nil, nil
}

// shmStart publishes sl as the caller's slot and passes the first gate. A
// fatal error (abort, deadlock, setup) comes back as err; the call is then
// over.
func (c *Comm) shmStart(what string, sl *shmSlot) (*shmCall, error) {
	x, err := c.shmArrive(what, sl.sig(), sl, nil)
	if err == nil {
		err = x.await()
	}
	if err != nil {
		return nil, err
	}
	return x, nil
}

// shmArrive is shmStart up to the first gate: it publishes sig and sl (nil
// for a slot that names no buffer and no error: a barrier's, a combined
// reduction's) and arrives at the gate. The caller then awaits the call
// (before it reads anything of it), where it is shallowest: a barrier or
// a combined reduction in its exported function (see gate.await). With
// op (not nil) the call is a combined reduction (coll.Combined): the
// last member to reach the gate, once it has judged the slots, if the
// verdict lets the call go on (they agree, with one length for all),
// reduces the members' rows into the result, which every member reads
// once through the gate. A fatal error (abort, deadlock, setup) ends the
// call.
//
// On 100,000 ranks every line of a rank's stack that a call touches is a
// cache miss (a hundred thousand other goroutines ran since it was last
// touched), so this path keeps its frames small: the cheap collectives
// pass no slot where it is empty, x is filled field by field, the
// combined reduction is op itself (not a closure), and errors are made
// in functions of their own (collErr): a literal, a closure or fmt's
// arguments take room in the frame even where unused; shm's setup, the
// opening of a gate and the errors have frames of their own. Locals:
// barrier 376 -> 120 bytes, combinedArrive 440 -> 88, shmArrive 384 ->
// 120, gate.arrive 104 -> 56; on 100,000 ranks an 8-byte Allreduce took
// 92-97 ms instead of 103-105, a Barrier 80-83 instead of 89-90.
func (c *Comm) shmArrive(what string, sig shmSig, sl *shmSlot, op Op) (*shmCall, error) {
	s, err := c.shm()
	if err == nil {
		c.settleLeft()
		err = s.gate.failed(c) // before the slot is written: see gate.broken
	}
	if err != nil {
		return nil, collErr(what, err)
	}
	st := c.state()
	p := st.gen & 1
	st.gen++
	x := &st.call
	x.reset()
	x.c, x.s, x.what, x.p, x.slots, x.sigs = c, s, what, p, s.slots[p], s.sigs[p]
	x.me = &x.slots[c.rank]
	if sl != nil && sl.empty() {
		sl = nil
	}
	if held := sl != nil; held || st.held[p] {
		// An empty slot (a barrier's, a combined reduction's) is written
		// only to drop the buffers an earlier call left there: on 100,000
		// ranks, every cache line a rank touches per call costs.
		if held {
			// Written only when it changed, as the signature below: the
			// others read it at every call (8-byte Allreduce on 2 ranks
			// 220 -> 188 ns, BenchmarkCollAllreduce, 4 alternated runs).
			if !x.me.same(sl) {
				*x.me = *sl
			}
		} else {
			x.me.clear(sig)
		}
		st.held[p] = held
	}
	sig.bad = sl != nil && sl.err != nil
	if x.sigs[c.rank] != sig {
		// Written only when it changed (a loop of one collective writes
		// the same signature every second call): the members' signatures
		// share lines, and a store takes the line from the others, who
		// read it again at the next verdict. On 2 goroutine ranks, with
		// the verdict written likewise (decide): Barrier 198 -> 161 ns,
		// 8-byte Allreduce 257 -> 233, Bcast 245 -> 221 (mpbench, medians
		// of 5 alternated runs); 8 and 100,000 ranks unchanged.
		x.sigs[c.rank] = sig
	}
	if x.k, x.open, err = s.gate.arrive(c, x, op); err != nil {
		return nil, collErr(what, err)
	}
	return x, nil
}

// decide is the last arriver's part at x's first gate: the verdict on
// every slot, and then, for a combined reduction by op, the reduction of
// the rows where the verdict lets it go on.
func (x *shmCall) decide(op Op) {
	v := &x.s.verdicts[x.p]
	if nv := x.judge(); *v != nv {
		*v = nv // only when it changed, as the signatures (shmArrive)
	}
	if op != nil && v.bad < 0 && v.sameN {
		n := x.sigs[0].n
		rows, res := x.s.rows[x.p], x.s.result[x.p][:n]
		copy(res, rows[:n])
		for i := 1; i < x.s.n; i++ {
			op(res, rows[i*coll.CombineLimit:][:n])
		}
	}
}

// collErr is the error of the collective what that failed with err: made
// in a function of its own (not inlined), so that the frames of the
// calls it fails keep no room for fmt's arguments (see shmArrive).
//
//go:noinline
func collErr(what string, err error) error {
	return fmt.Errorf("comm: %s: %w", what, err)
}

// await waits for the call's first gate, where shmArrive arrived, to
// open, and reads the verdict.
func (x *shmCall) await() error {
	if g := &x.s.gate; !x.open {
		var err error
		switch {
		case g.spins:
			err = g.await(x.c, x.k)
		case !g.yield(x.k): // here, not in g.await: one frame less (see gate.await)
			err = g.sleep(x.c, x.k)
		}
		if err != nil {
			return collErr(x.what, err)
		}
	}
	x.v = x.s.verdicts[x.p]
	x.err = x.agree()
	return nil
}

// stageInput copies in to the caller's staging storage of this generation
// (to be published in its slot before the gate).
func (c *Comm) stageInput(in []byte) []byte {
	c.settleLeft()
	st := c.state()
	p := st.gen & 1 // the generation shmStart will use
	if cap(st.stage[p]) < len(in) {
		st.stage[p] = alignedBytes(max(len(in), 256))
	}
	b := st.stage[p][:len(in)]
	copy(b, in)
	return b
}

// publish puts in into sl for the others to read: copied to the caller's
// staging storage when staged (one gate ends the call), or in place
// (they read it directly, and a second gate ends the call).
func (c *Comm) publish(sl *shmSlot, in []byte, staged bool) {
	if staged {
		sl.kind |= kStaged
		sl.a = c.stageInput(in)
	} else {
		sl.kind |= kDirect
		sl.a = in
	}
}

// fold leaves in dst the reduction, in rank order, of bytes lo..hi of the
// inputs of ranks 0..n-1 (n ≥ 1).
func (x *shmCall) fold(dst []byte, op Op, n, lo, hi int) {
	copy(dst, x.slots[0].a[lo:hi])
	for i := 1; i < n; i++ {
		op(dst, x.slots[i].a[lo:hi])
	}
}

// agree checks the slots for what must be the same on every member: the
// collective, the root, the element type, and each member's own arguments.
func (x *shmCall) agree() error {
	if i := x.v.bad; i >= 0 {
		return x.disagreement(i)
	}
	return nil
}

// disagreement returns the error of member i's slot against member 0's,
// or nil when they agree.
func (x *shmCall) disagreement(i int) error {
	s0, sg := x.sigs[0], x.sigs[i]
	switch {
	case sg.bad:
		return fmt.Errorf("comm: %s: rank %d: %w", x.what, i, x.slots[i].err)
	case sg.kind&^(kDirect|kStaged) != s0.kind&^(kDirect|kStaged):
		return fmt.Errorf("comm: %s: ranks 0 and %d call different collectives: %w", x.what, i, ErrArg)
	case sg.root != s0.root:
		return fmt.Errorf("comm: %s: rank 0 names root %d, rank %d root %d: %w", x.what, s0.root, i, sg.root, ErrArg)
	case sg.t != s0.t:
		return fmt.Errorf("comm: %s: rank 0 passes %v, rank %d %v: %w", x.what, s0.t, i, sg.t, ErrType)
	}
	return nil
}

// shmVerdict is what every member of a call must conclude alike from all
// the slots: worked out once, by the last member to reach the call's first
// gate, before it lets the others through (so n members read n
// signatures, not n² of them).
type shmVerdict struct {
	bad    int  // the first member whose slot disagrees with member 0's (agree), or -1
	direct bool // some member reads others' buffers in place: the call ends with a second gate
	sameN  bool // every member passed the same length (sameLen)
}

// judge works out the verdict of the call whose slots x sees; every slot
// is written (the caller is the last to reach the first gate).
func (x *shmCall) judge() shmVerdict {
	v := shmVerdict{bad: -1, sameN: true}
	s0 := x.sigs[0]
	k0 := s0.kind &^ (kDirect | kStaged)
	for i, sg := range x.sigs {
		if v.bad < 0 && (sg.bad || sg.kind&^(kDirect|kStaged) != k0 || sg.root != s0.root || sg.t != s0.t) {
			v.bad = i
		}
		v.direct = v.direct || sg.kind&kDirect != 0
		v.sameN = v.sameN && sg.n == s0.n
	}
	return v
}

// direct reports whether any member reads others' buffers in place, and
// so whether the call ends with a second gate.
func (x *shmCall) direct() bool { return x.v.direct }

// finish ends the call: the second gate if it has one, and the outcome.
func (x *shmCall) finish() error {
	if x.direct() {
		if err := x.s.gate.pass(x.c); err != nil {
			return collErr(x.what, err)
		}
		// Nobody reads this call's slots any more.
		*x.me = shmSlot{kind: x.me.kind}
		x.c.state().held[x.p] = false
	}
	return x.err
}

// sameLen checks that every member passed the same length (slot n) as
// rank ref, the reference every member compares with.
func (x *shmCall) sameLen(name string, ref int) error {
	if x.v.sameN {
		return nil
	}
	n := x.sigs[ref].n
	for i, sg := range x.sigs {
		if sg.n != n {
			return fmt.Errorf("comm: %s: rank %d's %s has %d bytes, rank %d's %d: counts differ between ranks: %w",
				x.what, i, name, sg.n, ref, n, ErrTruncate)
		}
	}
	return nil
}

// chunk returns the caller's part of an n-byte vector split among the
// members at 64-byte boundaries (cache lines, so that no two ranks write
// one line), or at coll.Unit's multiple of 64 for a struct type whose
// size does not divide 64 (whole elements for every type).
func (x *shmCall) chunk(n int) (lo, hi int) {
	r, size, u := x.c.rank, x.s.n, coll.Unit(x.sigs[x.c.rank].t.Size())
	units := (n + u - 1) / u
	lo, hi = min(n, units*r/size*u), min(n, units*(r+1)/size*u)
	return lo, hi
}

// block is the unit in which shared-memory reductions walk a chunk: the
// accumulator stays in the first-level cache while the inputs stream by.
const block = 8 << 10

// blockLen returns the length of the blocks in which a reduction walks
// a chunk: block, or less to hold whole elements (at least a unit).
func (x *shmCall) blockLen() int {
	u := coll.Unit(x.sigs[x.c.rank].t.Size())
	return max(u, block/u*u)
}

// leave ends the call for a caller that need not wait for the others (a
// broadcast's root whose input is staged: they read the copy), and
// reports true, when it did not open the first gate. It does not learn
// the verdict: a mismatch fails the others' calls, not its own (as a
// root's whose broadcast is a tree of messages, and MPI libraries').
// Its next shared-memory collective on the communicator ends the call
// first (settleLeft), before it writes anything of its own. A caller that
// opened the gate knows the verdict already, and ends the call as any
// other.
func (x *shmCall) leave() bool {
	if x.open {
		return false
	}
	x.left = true
	return true
}

// settleLeft ends the shared-memory collective on c that the caller left
// (leave), if any, before it writes anything of its next one (staging,
// its row, its slot: a member may still read those of the call before
// the one it left, until it arrives at the left call's gate). It awaits
// the left call's gate and passes its second gate if it has one. What
// fails there (an abort, the deadlock detector) breaks the gate
// (gate.sleep), and the next call fails with it before it arrives
// (shmArrive).
func (c *Comm) settleLeft() {
	if st := c.cst; st != nil && st.call.left {
		st.call.left = false
		st.call.end()
	}
}

// end is settleLeft's part for the call x left.
//
//go:noinline
func (x *shmCall) end() {
	if x.await() == nil {
		x.err = nil // the others' outcome, not the caller's (leave)
		x.finish()  //nolint:errcheck // its error broke the gate: see settleLeft
	}
}
