package comm

import (
	"fmt"

	"github.com/mpgo/mpgo/comm/internal/coll"
)

// A persistent collective whose starts run an algorithm of fixed
// exchanges (recursive doubling's Allreduce of short vectors on a
// power-of-two number of members, the dissemination Barrier, the
// binomial Bcast of short buffers and Reduce, the pairwise and Bruck's
// Alltoall, the ring's and Bruck's Allgather) replays
// them with point-to-point requests made once, the way MPI's persistent
// collectives run a schedule planned at init (coll's *Schedule
// functions say what the algorithms exchange): each start posts the
// receives of every step at once (so that a partner's message finds its
// receive instead of the unexpected queue), then starts each step's
// send, waits for the step and combines. It sends what the algorithm
// sends, with its tag, on the plan's collective context, so a member
// that replays and one that runs the algorithm (its first start, or a
// start after a failure of its own) still meet. It begins after a start
// whose members agreed on the arguments (coll_agree.go), so nothing
// checked across members can differ any more; a message of another tag
// or length still fails the start. Only where the members do not all run
// in this process (a plan there meets in its parent's table instead) and
// nothing records the run (the trace logs the collective's own calls).
//
// A start and its Wait between 2 processes of one host (mpbench
// allreduce_persistent against allreduce under mpiexec -n 2, 8 alternated
// runs, the osu loop's barrier between calls): 8 B 0.552 us before (the
// algorithm at every start), 0.388 replayed, against 0.443-0.458 for the
// blocking call and MPICH 4.0.2's 0.498 persistent (0.500 blocking);
// 64 B 0.553 -> 0.398 (blocking 0.44-0.46, MPICH 0.505); 1 KiB 0.758 ->
// 0.604 (blocking 0.653, MPICH 0.734). A Barrier (barrier_persistent, 8
// runs): 0.484 -> 0.375 us, the blocking call 0.370, MPICH 0.288
// persistent and 0.539 blocking. A Bcast (bcast_persistent, 6 runs): 1 B
// 0.514 -> 0.403 us, 64 B 0.531 -> 0.392, 1 KiB 1.212 -> 1.128; the
// blocking call 0.438, 0.490, 1.174; MPICH 0.344, 0.393, 0.529
// persistent. A Reduce to rank 0 (reduce_persistent, 6 runs): 4 B 0.368
// -> 0.242 us, 64 B 0.382 -> 0.234, 1 KiB 0.513 -> 0.414; the blocking
// call 0.282, 0.285, 0.458; MPICH 0.365, 0.370, 0.524 persistent.

// replay is one member's requests of a replayed collective.
type replay struct {
	what   string
	t      Type   // the element type of the algorithm's messages
	cc     *Comm  // the plan's collective context
	before func() // what a start does first (nil: nothing)
	steps  []replayStep
}

// replayStep is a send, a receive or both (in that order), then what the
// step does with what it received.
type replayStep struct {
	send, recv *Request     // nil: none
	tag        int          // the algorithm's, of both messages
	into       []byte       // the receive's buffer
	want       int          // elements the received message carries
	combine    func([]byte) // takes the received buffer; nil: nothing
}

// replays reports whether the starts of a plan on c (its private
// communicator, of the collective k of n bytes) may replay the
// algorithm alg once a start succeeded: c picks alg (or any, for
// coll.Auto: the replay's maker picks), its members agreed, they do not
// all share this process, and nothing records the run.
func (c *Comm) replays(k coll.Collective, n int, alg coll.Algorithm) bool {
	st := c.state()
	if c.size < 2 || c.ct != nil || !st.agreed || st.shared {
		return false
	}
	return alg == coll.Auto || c.pick(k, coll.Plain, n) == alg
}

// replayed is a plan's run (run, the collective k of n bytes on the
// plan's private communicator) that replays its algorithm from the start
// after its first that succeeded, when that ran alg (mk makes the
// replay; nil: the plan keeps running the algorithm). The choice is
// made once: a plan's algorithm, its members' placement and whether its
// world records are the same at every start, and its first start that
// succeeded is one whose members agreed.
func replayed(k coll.Collective, n int, alg coll.Algorithm, run func(p *Comm) error, mk func(p *Comm) *replay) func(p *Comm) error {
	var d *replay
	decided := false
	return func(p *Comm) error {
		if d != nil {
			return d.run(p)
		}
		err := run(p)
		if err == nil && !decided {
			decided = true
			if p.replays(k, n, alg) {
				d = mk(p)
			}
		}
		return err
	}
}

// newReplay returns an empty replay of what, whose messages have
// elements of type t, on c's collective context.
func (c *Comm) newReplay(what string, t Type) *replay {
	return &replay{what: what, t: t, cc: c.coll()}
}

// step adds a step that sends out to rank to (to < 0: no send), then
// receives into from rank from (from < 0: no receive), both with tag, and
// calls combine with into. It reports false when a request cannot be
// made: the plan then runs the algorithm at every start instead.
func (d *replay) step(tag, to int, out []byte, from int, into []byte, combine func([]byte)) bool {
	s := replayStep{tag: tag, into: into, want: len(into) / d.t.Size(), combine: combine}
	var err error
	if from >= 0 {
		// Any tag, as the algorithm's receives: another one fails the start.
		if s.recv, err = d.cc.RecvInit(into, d.t, from, AnyTag); err != nil {
			return false
		}
	}
	if to >= 0 {
		if s.send, err = d.cc.SendInit(out, d.t, to, tag); err != nil {
			return false
		}
	}
	d.steps = append(d.steps, s)
	return true
}

// run is one start. It leaves every request inactive, whatever the
// outcome.
func (d *replay) run(c *Comm) error {
	if err := c.usable(); err != nil {
		return collErr(d.what, err)
	}
	if d.before != nil {
		d.before()
	}
	quiet := c.cst.quiet // the plan's worker waits out of the deadlock detector's sight
	wait := func(r *Request) (Status, error) {
		if quiet {
			st, err := r.e().WaitQuiet()
			return Status(st), err
		}
		return r.Wait()
	}
	posted := 0
	for posted < len(d.steps) {
		if r := d.steps[posted].recv; r != nil {
			if err := r.Start(); err != nil { // completed with err: inactive
				return d.fail(wait, 0, posted, err)
			}
		}
		posted++
	}
	for k, s := range d.steps {
		var err error
		if s.send != nil {
			if err = s.send.Start(); err != nil {
				return d.fail(wait, k, posted, err)
			}
		}
		if s.recv != nil {
			var st Status
			st, err = wait(s.recv)
			if err == nil && (st.Tag != s.tag || st.Count != s.want) {
				err = fmt.Errorf("rank %d sent %d elements with tag %d, want %d with tag %d (another collective or algorithm): %w",
					st.Source, st.Count, st.Tag, s.want, s.tag, ErrArg)
			}
		}
		if s.send != nil {
			if _, serr := wait(s.send); err == nil {
				err = serr
			}
		}
		if err != nil {
			return d.fail(wait, k+1, posted, err)
		}
		if s.combine != nil {
			s.combine(s.into)
		}
	}
	return nil
}

// fail ends a start that failed with err: the receives from step from on
// (of the posted ones) are cancelled and waited for, so that the next
// start finds every request inactive.
func (d *replay) fail(wait func(*Request) (Status, error), from, posted int, err error) error {
	for _, s := range d.steps[from:posted] {
		if s.recv != nil {
			s.recv.Cancel() //nolint:errcheck // a receive's Cancel fails only on a nil request
			wait(s.recv)    //nolint:errcheck // cancelled, or completed meanwhile: either way inactive
		}
	}
	return collErr(d.what, err)
}

// allreduceReplay is the replay of c's recursive doubling of send into
// recv (c: a persistent Allreduce's private communicator), or nil where
// the algorithm is not replayed (the members are not a power of two).
func (c *Comm) allreduceReplay(send, recv []byte, t Type, op Op) *replay {
	partners, lower, ok := coll.RecursiveDoublingSchedule(c.rank, c.size)
	if !ok {
		return nil
	}
	d := c.newReplay("allreduce", t)
	for k, p := range partners {
		tmp := alignedBytes(len(recv))
		combine := func(in []byte) { op(recv, in) }
		if lower[k] { // rank order: the partner's vector comes first
			combine = func(in []byte) {
				op(in, recv)
				copy(recv, in)
			}
		}
		if !d.step(coll.TagRecursiveDoubling, p, recv, p, tmp, combine) {
			return nil
		}
	}
	if !same(send, recv) {
		d.before = func() { copy(recv, send) }
	}
	return d
}

// barrierReplay is the replay of c's dissemination barrier (c: a
// persistent Barrier's private communicator), or nil.
func (c *Comm) barrierReplay() *replay {
	to, from, ok := coll.DisseminationSchedule(c.rank, c.size)
	if !ok {
		return nil
	}
	d := c.newReplay("barrier", Byte)
	for k := range to {
		if !d.step(coll.TagDissemination, to[k], nil, from[k], nil, nil) {
			return nil
		}
	}
	return d
}

// bcastReplay is the replay of c's binomial broadcast of buf from root
// (c: a persistent Bcast's private communicator), or nil.
func (c *Comm) bcastReplay(buf []byte, t Type, root int) *replay {
	parent, children, ok := coll.BinomialBcastSchedule(c.rank, c.size, root)
	if !ok {
		return nil
	}
	d := c.newReplay("bcast", t)
	if parent >= 0 && !d.step(coll.TagBinomialBcast, -1, nil, parent, buf, nil) {
		return nil
	}
	for _, ch := range children {
		if !d.step(coll.TagBinomialBcast, ch, buf, -1, nil, nil) {
			return nil
		}
	}
	return d
}

// reduceReplay is the replay of c's binomial reduction of send into
// root's recv (c: a persistent Reduce's private communicator), or nil.
func (c *Comm) reduceReplay(send, recv []byte, t Type, op Op, root int) *replay {
	children, parent, hopTo, hopFrom, ok := coll.BinomialReduceSchedule(c.rank, c.size, root)
	if !ok {
		return nil
	}
	acc := recv // rank 0's result is the root's when it is the root
	if c.rank != 0 || root != 0 {
		acc = alignedBytes(len(send))
	}
	d := c.newReplay("reduce", t)
	for _, ch := range children {
		if !d.step(coll.TagBinomialReduce, -1, nil, ch, alignedBytes(len(send)), func(in []byte) { op(acc, in) }) {
			return nil
		}
	}
	if parent >= 0 && !d.step(coll.TagBinomialReduce, parent, acc, -1, nil, nil) {
		return nil
	}
	if hopTo >= 0 && !d.step(coll.TagReduceHop, hopTo, acc, -1, nil, nil) {
		return nil
	}
	if hopFrom >= 0 && !d.step(coll.TagReduceHop, -1, nil, hopFrom, recv, nil) {
		return nil
	}
	if !same(acc, send) {
		d.before = func() { copy(acc, send) }
	}
	return d
}

// alltoallReplay is the replay of c's Alltoall of send into recv (c: a
// persistent Alltoall's private communicator) by the algorithm c picks,
// pairwise or Bruck's, or nil.
func (c *Comm) alltoallReplay(send, recv []byte, t Type) *replay {
	switch c.pick(coll.Alltoall, coll.Plain, len(send)/c.size) {
	case coll.Pairwise:
		return c.pairwiseReplay(send, recv, t)
	case coll.Bruck:
		return c.bruckAlltoallReplay(send, recv, t)
	}
	return nil
}

// pairwiseReplay is the replay of the pairwise Alltoall. In place, the
// sends read a copy taken at each start, as the algorithm's do.
func (c *Comm) pairwiseReplay(send, recv []byte, t Type) *replay {
	to, from, ok := coll.PairwiseSchedule(c.rank, c.size)
	if !ok {
		return nil
	}
	me, k := c.rank, len(send)/c.size
	block := func(b []byte, i int) []byte { return b[i*k : (i+1)*k] }
	d := c.newReplay("alltoall", t)
	out := send
	if same(send, recv) {
		out = alignedBytes(len(send))
		d.before = func() { copy(out, send) }
	} else {
		d.before = func() { copy(block(recv, me), block(send, me)) }
	}
	for i := range to {
		if !d.step(coll.TagPairwise, to[i], block(out, to[i]), from[i], block(recv, from[i]), nil) {
			return nil
		}
	}
	return d
}

// allgatherReplay is the replay of c's Allgather of send into recv (c: a
// persistent Allgather's private communicator) by the algorithm c picks,
// the ring or Bruck's, or nil.
func (c *Comm) allgatherReplay(send, recv []byte, t Type) *replay {
	send, inPlace, _ := c.allgatherArgs("allgather", send, recv, t)
	n, me, k := c.size, c.rank, len(send)
	block := func(b []byte, i, m int) []byte { return b[i*k : (i+m)*k] }
	d := c.newReplay("allgather", t)
	switch c.pick(coll.Allgather, coll.Plain, k) {
	case coll.Ring:
		right, left, sb, rb, ok := coll.RingAllgatherSchedule(me, n)
		if !ok {
			return nil
		}
		if !inPlace {
			d.before = func() { copy(block(recv, me, 1), send) }
		}
		for s := range sb {
			if !d.step(coll.TagAllgatherRing, right, block(recv, sb[s], 1), left, block(recv, rb[s], 1), nil) {
				return nil
			}
		}
	case coll.Bruck:
		to, from, at, count, ok := coll.BruckAllgatherSchedule(me, n)
		if !ok {
			return nil
		}
		tmp := alignedBytes(n * k) // block i: rank me+i's
		d.before = func() { copy(tmp, send) }
		for s := range to {
			var rotate func([]byte)
			if s == len(to)-1 {
				rotate = func([]byte) {
					copy(recv[me*k:n*k], tmp[:(n-me)*k])
					copy(recv[:me*k], tmp[(n-me)*k:n*k])
				}
			}
			if !d.step(coll.TagAllgatherBruck, to[s], block(tmp, 0, count[s]), from[s], block(tmp, at[s], count[s]), rotate) {
				return nil
			}
		}
	default:
		return nil
	}
	return d
}

// bruckAlltoallReplay is the replay of Bruck's Alltoall: each start
// rotates send into a buffer and packs the first step's blocks; a step
// sends what the step before packed, receives into a buffer of its own
// (all posted at once), unpacks it and packs the next step's blocks
// (its send waited for: the pack buffer is free), and the last step
// puts the blocks in place.
func (c *Comm) bruckAlltoallReplay(send, recv []byte, t Type) *replay {
	to, from, blocks, ok := coll.BruckAlltoallSchedule(c.rank, c.size)
	if !ok {
		return nil
	}
	n, me, k := c.size, c.rank, len(send)/c.size
	tmp, pack := alignedBytes(n*k), alignedBytes(n*k)
	packFor := func(s int) {
		for j, i := range blocks[s] {
			copy(pack[j*k:(j+1)*k], tmp[i*k:(i+1)*k])
		}
	}
	d := c.newReplay("alltoall", t)
	d.before = func() {
		coll.BruckRotate(tmp, send, me, n, k)
		packFor(0)
	}
	for s := range to {
		m := len(blocks[s])
		step := func(in []byte) {
			for j, i := range blocks[s] {
				copy(tmp[i*k:(i+1)*k], in[j*k:(j+1)*k])
			}
			if s+1 < len(to) {
				packFor(s + 1)
				return
			}
			coll.BruckPlace(recv, tmp, me, n, k)
		}
		if !d.step(coll.TagAlltoallBruck, to[s], pack[:m*k], from[s], alignedBytes(m*k), step) {
			return nil
		}
	}
	return d
}
