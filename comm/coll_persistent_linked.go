package comm

import (
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/mpgo/mpgo/comm/internal/engine"
)

// Linked persistent collectives: where a persistent collective's start
// completed in its parent's table of meetings (coll_nonblocking_meet.go)
// with every member a start of a plan, that meeting links the members'
// plans into a group, and from then on their starts meet in the group
// alone: a counter, no lock, no table, no request of their own.
//
// A plan's buffers, op, root and type are fixed when it is made, and the
// linking meeting checked them against each other, so a later start has
// nothing to agree on: the last member to start does the operation for
// all, in their buffers (which belong to the operation until each
// member's request completes), and completes every member's request. A
// member's Wait watches its request as any Wait does, and only when it
// would park does it post a receive of its own that nothing matches
// (pooled: a start allocates nothing), for an abort or the deadlock
// detector to fail, and which the last member takes back when it
// completes the start.
//
// Invariants:
//   - Every member's k-th start of a group is the group's k-th start: a
//     member starts again only once its request completed, which the last
//     member of the previous start does after it reset the counter.
//   - A member's part in a start (plan.own) is arrived from its start,
//     then taken by the last member — who only then touches its buffers,
//     and then completes its request — or abandoned by the member itself,
//     when the receive it sleeps on failed (an abort, the deadlock
//     detector) before the last member came: the member then completes
//     its own request with that error and may reuse its buffers at once.
//     One compare-and-swap decides between the two, as Request.Take does
//     for the table's meetings. The last member also takes the receive a
//     member sleeps on off its queue before it touches anything: if an
//     abort or the deadlock detector failed it first, the member will
//     leave with that error, so the start fails for all.
//   - A start that found a member abandoned fails every member's request
//     it took, touching no buffer, and the group is broken: every later
//     start fails (as a broken gate's collectives do, coll_shm.go).
//   - Starts of a group need not interleave with the parent's other
//     non-blocking collectives as the table's meetings do (every member
//     links the same plans at the same meeting, so every member's k-th call
//     in the table is still the same call); starts of two linked plans in
//     different orders on two members complete alike, where MPI calls the
//     program erroneous.

// planGroup is the members' plans of one persistent collective, linked.
type planGroup struct {
	n     int32
	count atomic.Int32 // members that started the current start
	_     [56]byte     // count, written by every member, apart from what the last one reads
	// broken is the error of the start that a member abandoned first:
	// every later start fails with it.
	broken atomic.Pointer[error]
	plans  []*plan // by rank
	e      nbMeet  // the members' calls as the linking meeting had them, and its working memory
}

// A member's part in the group's current start (plan.own).
const (
	memberIdle      uint32 = iota // never started in the group
	memberArrived                 // started; the start is not done
	memberTaken                   // the last member does it, or did it
	memberAbandoned               // the member left with an error first
)

// link makes the plans of a meeting that every member reached with a
// start of a plan, and whose operation it has just done, one group (see
// above); the members see it at their next start, which comes after
// their requests complete.
func (e *nbMeet) link() {
	ms := e.members
	for i := range ms {
		if ms[i].pl == nil || ms[i].pl.group.Load() != nil {
			return
		}
	}
	g := &planGroup{n: int32(len(ms)), plans: make([]*plan, len(ms)), e: nbMeet{members: slices.Clone(ms)}}
	for i := range g.e.members {
		g.e.members[i].r, g.e.members[i].pl = nil, nil
		g.plans[i] = ms[i].pl
	}
	for _, pl := range g.plans {
		pl.group.Store(g)
	}
}

// linked returns pl's group when its current or last start was one of
// the group's, nil while it starts in the table (its first starts, even
// once the meeting of one of them linked it).
func (pl *plan) linked() *planGroup {
	if pl.own.Load() == memberIdle {
		return nil
	}
	return pl.group.Load()
}

// startLinked starts pl in its group g: the last member to start does
// the operation for all.
func (pl *plan) startLinked(g *planGroup) error {
	if e := g.broken.Load(); e != nil {
		return fmt.Errorf("comm: start of %s, after an earlier start failed: %w", pl.what, *e)
	}
	if err := pl.ep.Err(); err != nil { // aborted: as a start in the table fails
		return fmt.Errorf("comm: start of %s: %w", pl.what, err)
	}
	pl.own.Store(memberArrived)
	if g.count.Add(1) == g.n {
		g.settle()
	} else if pl.queued.CompareAndSwap(false, true) {
		pl.ep.Defer(pl.kickFn) // see plan.start
	}
	return nil
}

// settle does a start of the group that every member reached: it takes
// every member's part, and the receive the member sleeps on, if any, off
// its queue; then it does the operation and completes their requests.
// When a member abandoned its part, or its receive was failed (an abort,
// the deadlock detector) before the part could be taken, it fails them
// all instead.
func (g *planGroup) settle() {
	g.count.Store(0) // before any request completes: see the invariants
	for i, pl := range g.plans {
		if !pl.own.CompareAndSwap(memberArrived, memberTaken) {
			g.fail(i, false)
			return
		}
		if q := pl.sleeper.Swap(nil); q != nil {
			if !q.Take() {
				g.fail(i, true) // q failed first: its member leaves with the error
				return
			}
			pl.held = q
		}
	}
	g.e.run()
	for _, pl := range g.plans {
		pl.r.Complete(engine.Status{}, nil)
		pl.wake()
	}
}

// fail ends a start whose member i left first, having taken the parts
// of the members before it (and member i's, when took): every other
// member's request fails with the cause, as member i's does, and no
// buffer is touched. The cause is the world's (an abort), else the
// deadlock detector's: nothing else fails a member's receive.
func (g *planGroup) fail(i int, took bool) {
	cause := g.plans[i].ep.Err()
	if cause == nil {
		cause = ErrDeadlock
	}
	g.broken.CompareAndSwap(nil, &cause)
	for j, pl := range g.plans {
		if j < i || (j == i && took) || (j > i && pl.own.CompareAndSwap(memberArrived, memberTaken)) {
			pl.r.Complete(engine.Status{}, fmt.Errorf("comm: %s: rank %d's start failed first: %w", pl.what, i, cause))
			pl.wake()
		}
	}
}

// wake wakes the member of pl if it sleeps on a receive of its own
// (awaitLinked), its request complete: the receive settle took, or one
// posted since.
func (pl *plan) wake() {
	if q := pl.held; q != nil {
		pl.held = nil
		q.Complete(engine.Status{}, nil)
	}
	if q := pl.sleeper.Swap(nil); q != nil {
		q.Retract(nil)
	}
}

// awaitLinked waits for pl's start in group g to complete: on the rank's
// goroutine in Wait, or (quiet) on the worker, when the rank blocks on
// something else; whichever comes second leaves it to the first.
func (pl *plan) awaitLinked(g *planGroup, quiet bool) {
	if !pl.waiting.CompareAndSwap(false, true) {
		return
	}
	defer pl.waiting.Store(false)
	r := pl.r
	if r.Completed() || (!quiet && r.Poll()) {
		return
	}
	for !r.Completed() {
		// Sleep on a receive that the deadlock detector and an abort see.
		q, err := pl.c.selfWait(true)
		if err != nil {
			pl.abandon(g, err)
			return
		}
		pl.sleeper.Store(q)
		if r.Completed() && pl.sleeper.CompareAndSwap(q, nil) {
			q.Retract(nil) // completed meanwhile: nobody else has q
			q.Finish()
			return
		}
		if quiet {
			q.WaitQuiet()
		} else {
			q.WaitPooled()
		}
		if err = q.Cause(); err != nil {
			// An abort or the deadlock detector failed q. A failed q is
			// not recycled: a last member may have it from sleeper by
			// now, and still tries to take or retract it.
			pl.sleeper.CompareAndSwap(q, nil)
			pl.abandon(g, err)
			return
		}
		// Completed with no error, by a last member once it completed r
		// (wake), or by the last member of the previous start, late
		// (then r is not complete yet: sleep again); completing q was
		// the last thing it did with it.
		q.Finish()
	}
}

// abandon ends the caller's wait for its start with err, unless the last
// member took its part first: it then waits for the start, which
// completes without blocking.
func (pl *plan) abandon(g *planGroup, err error) {
	if pl.own.CompareAndSwap(memberArrived, memberAbandoned) {
		g.broken.CompareAndSwap(nil, &err)
		pl.r.Complete(engine.Status{}, err)
		return
	}
	for !pl.r.Completed() {
		runtime.Gosched()
	}
}
