package comm

import (
	"fmt"

	"github.com/mpgo/mpgo/comm/internal/coll"
)

// A persistent Allreduce whose starts run recursive doubling (short
// vectors, a power-of-two number of members) replays the algorithm's
// exchanges with point-to-point requests made once, the way MPI's
// persistent collectives run a schedule planned at init: each start posts
// the receives of every step at once (so that a partner's message finds
// its receive instead of the unexpected queue), then starts each step's
// send, waits for the step and combines. It sends what the algorithm
// sends, with its tag, on the plan's collective context, so a member
// that replays and one that runs the algorithm (its first start, or a
// start after a failure of its own) still meet. It begins after a start
// whose members agreed on the arguments (coll_agree.go), so nothing
// checked across members can differ any more; a message of another tag
// or length still fails the start.
//
// A start and its Wait between 2 processes of one host (mpbench
// allreduce_persistent against allreduce under mpiexec -n 2, 8 alternated
// runs, the osu loop's barrier between calls): 8 B 0.552 us before (the
// algorithm at every start), 0.388 replayed, against 0.443-0.458 for the
// blocking call and MPICH 4.0.2's 0.498 persistent (0.500 blocking);
// 64 B 0.553 -> 0.398 (blocking 0.44-0.46, MPICH 0.505); 1 KiB 0.758 ->
// 0.604 (blocking 0.653, MPICH 0.734).

// allreduceReplay is the requests of one member's replay.
type allreduceReplay struct {
	recvs, sends []*Request // a step's receive from its partner, and send to it
	tmp          [][]byte   // what a step receives
	lower        []bool     // the step's partner is the lower operand
	op           Op
	want         int // elements a message carries
}

// newAllreduceReplay makes the replay of c's recursive doubling of recv
// (c: a persistent Allreduce's private communicator), or returns nil
// where the algorithm is not replayed (the members are not a power of
// two).
func (c *Comm) newAllreduceReplay(recv []byte, t Type, op Op) *allreduceReplay {
	partners, lower, ok := coll.RecursiveDoublingSchedule(c.rank, c.size)
	if !ok {
		return nil
	}
	cc := c.coll()
	d := &allreduceReplay{lower: lower, op: op, want: len(recv) / t.Size()}
	for _, p := range partners {
		tmp := alignedBytes(len(recv))
		r, err := cc.RecvInit(tmp, t, p, AnyTag) // any tag, as the algorithm's receives: another one fails the start
		if err != nil {
			return nil
		}
		s, err := cc.SendInit(recv, t, p, coll.TagRecursiveDoubling)
		if err != nil {
			return nil
		}
		d.recvs, d.sends, d.tmp = append(d.recvs, r), append(d.sends, s), append(d.tmp, tmp)
	}
	return d
}

// run is one start: recv becomes the reduction of every member's send.
// It leaves every request inactive, whatever the outcome.
func (d *allreduceReplay) run(c *Comm, send, recv []byte) error {
	if err := c.usable(); err != nil {
		return collErr("allreduce", err)
	}
	if !same(send, recv) {
		copy(recv, send)
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
	for posted < len(d.recvs) {
		if err := d.recvs[posted].Start(); err != nil { // completed with err: inactive
			return d.fail(wait, 0, posted, err)
		}
		posted++
	}
	for k, s := range d.sends {
		if err := s.Start(); err != nil {
			return d.fail(wait, k, posted, err)
		}
		st, err := wait(d.recvs[k])
		if _, serr := wait(s); err == nil {
			err = serr
		}
		if err == nil && (st.Tag != coll.TagRecursiveDoubling || st.Count != d.want) {
			err = fmt.Errorf("rank %d sent %d elements with tag %d, want %d with tag %d (another collective or algorithm): %w",
				st.Source, st.Count, st.Tag, d.want, coll.TagRecursiveDoubling, ErrArg)
		}
		if err != nil {
			return d.fail(wait, k+1, posted, err)
		}
		if d.lower[k] {
			d.op(d.tmp[k], recv)
			copy(recv, d.tmp[k])
		} else {
			d.op(recv, d.tmp[k])
		}
	}
	return nil
}

// fail ends a start that failed with err: the receives from step from on
// (of the posted ones) are cancelled and waited for, so that the next
// start finds every request inactive.
func (d *allreduceReplay) fail(wait func(*Request) (Status, error), from, posted int, err error) error {
	for _, r := range d.recvs[from:posted] {
		r.Cancel() //nolint:errcheck // a receive's Cancel fails only on a nil request
		wait(r)    //nolint:errcheck // cancelled, or completed meanwhile: either way inactive
	}
	return collErr("allreduce", err)
}
