package comm

import (
	"fmt"

	"github.com/mpgo/mpgo/comm/internal/coll"
)

// A persistent collective whose starts run an algorithm of fixed
// exchanges (recursive doubling's Allreduce of short vectors on a
// power-of-two number of members, the dissemination Barrier) replays
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
// persistent and 0.539 blocking.

// replay is one member's requests of a replayed collective.
type replay struct {
	what   string
	tag    int    // the algorithm's messages'
	before func() // what a start does first (nil: nothing)
	steps  []replayStep
}

// replayStep is a send to a partner and a receive from a partner (the
// same one or not), then what the step does with what it received.
type replayStep struct {
	send, recv *Request
	want       int          // elements the received message carries
	combine    func([]byte) // takes the received buffer; nil: nothing
	tmp        []byte       // the receive's buffer
}

// replayable reports whether the starts of a plan on c (its private
// communicator) that ran alg and succeeded may replay it from now on.
func (c *Comm) replayable(alg, want coll.Algorithm) bool {
	st := c.state()
	return alg == want && c.ct == nil && st.agreed && !st.shared
}

// newReplay makes the requests of what's steps on c's collective
// context: sending n elements of t to to[k] and receiving as many from
// from[k] into a buffer of its own, with tag, then combine(k, buffer)
// (nil: nothing). It returns nil if a request cannot be made; the plan
// then runs the algorithm at every start.
func (c *Comm) newReplay(what string, tag int, t Type, send []byte, to, from []int, combine func(k int) func([]byte)) *replay {
	cc := c.coll()
	d := &replay{what: what, tag: tag}
	for k := range to {
		tmp := alignedBytes(len(send))
		r, err := cc.RecvInit(tmp, t, from[k], AnyTag) // any tag, as the algorithm's receives: another one fails the start
		if err != nil {
			return nil
		}
		s, err := cc.SendInit(send, t, to[k], tag)
		if err != nil {
			return nil
		}
		step := replayStep{send: s, recv: r, want: len(send) / t.Size(), tmp: tmp}
		if combine != nil {
			step.combine = combine(k)
		}
		d.steps = append(d.steps, step)
	}
	return d
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
		if err := d.steps[posted].recv.Start(); err != nil { // completed with err: inactive
			return d.fail(wait, 0, posted, err)
		}
		posted++
	}
	for k, s := range d.steps {
		if err := s.send.Start(); err != nil {
			return d.fail(wait, k, posted, err)
		}
		st, err := wait(s.recv)
		if _, serr := wait(s.send); err == nil {
			err = serr
		}
		if err == nil && (st.Tag != d.tag || st.Count != s.want) {
			err = fmt.Errorf("rank %d sent %d elements with tag %d, want %d with tag %d (another collective or algorithm): %w",
				st.Source, st.Count, st.Tag, s.want, d.tag, ErrArg)
		}
		if err != nil {
			return d.fail(wait, k+1, posted, err)
		}
		if s.combine != nil {
			s.combine(s.tmp)
		}
	}
	return nil
}

// fail ends a start that failed with err: the receives from step from on
// (of the posted ones) are cancelled and waited for, so that the next
// start finds every request inactive.
func (d *replay) fail(wait func(*Request) (Status, error), from, posted int, err error) error {
	for _, s := range d.steps[from:posted] {
		s.recv.Cancel() //nolint:errcheck // a receive's Cancel fails only on a nil request
		wait(s.recv)    //nolint:errcheck // cancelled, or completed meanwhile: either way inactive
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
	d := c.newReplay("allreduce", coll.TagRecursiveDoubling, t, recv, partners, partners, func(k int) func([]byte) {
		if lower[k] { // rank order: the partner's vector comes first
			return func(in []byte) {
				op(in, recv)
				copy(recv, in)
			}
		}
		return func(in []byte) { op(recv, in) }
	})
	if d != nil && !same(send, recv) {
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
	return c.newReplay("barrier", coll.TagDissemination, Byte, nil, to, from, nil)
}
