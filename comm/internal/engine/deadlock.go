package engine

import (
	"fmt"
	"sync"
	"time"
)

// The in-process deadlock detector, and the descriptions of pending
// operations it reports (also read by a process's report on a signal and
// by the distributed detector of a launched job, through Pending).

// detect runs the deadlock detector until Close: a world is deadlocked when
// every live rank stays blocked over two consecutive looks at the same
// parks (its parks counter unchanged). A rank is blocked when all of its
// goroutines in mpgo sleep on incomplete operations: its parked goroutines
// (parked.go) are at least its own goroutine (unless it returned) and its
// counted helpers (Comm.Go, non-blocking collectives; a helper that waits
// quietly is not counted while it sleeps). All wake-ups come from
// completions, and a goroutine parks only on an incomplete operation, so
// at the instant between the two looks no goroutine of any rank was
// running and none could complete another's operation.
func (w *World) detect(every time.Duration) {
	defer close(w.stopped)
	t := time.NewTicker(every)
	defer t.Stop()
	prev := make([]look, len(w.eps))
	cur := make([]look, len(w.eps))
	havePrev := false
	for {
		select {
		case <-w.detector:
			return
		case <-t.C:
		}
		if w.state.Load() != stateRunning {
			havePrev = false
			continue
		}
		all, live := true, 0
		for i := range w.eps {
			l, blocked := w.eps[i].look(cur[i].recs[:0])
			cur[i] = l
			if !blocked {
				all = false
				break
			}
			if len(l.recs) > 0 {
				live++
			}
		}
		if !all || live == 0 {
			havePrev = false
			continue
		}
		if !havePrev || !sameLooks(prev, cur) {
			prev, cur = cur, prev
			havePrev = true
			continue
		}
		w.declareDeadlock(cur)
		havePrev = false
	}
}

// look is what the detector saw of one rank: its parks counter and what
// its parked goroutines wait for.
type look struct {
	parks uint64
	recs  []waitRec
}

// look returns what ep's goroutines wait for now, reusing buf, and whether
// ep is blocked: every goroutine of ep in mpgo parked on an incomplete
// operation, or ep returned with nothing of it running.
func (ep *Endpoint) look(buf []waitRec) (look, bool) {
	p := ep.parks.Load()
	ep.pmu.Lock()
	for _, r := range ep.parked {
		buf = append(buf, r.wr)
	}
	ep.pmu.Unlock()
	l := look{parks: p, recs: buf}
	need := int(ep.helpers.Load())
	if !ep.done.Load() {
		need++ // the rank's own goroutine
	}
	if len(buf) < need || ep.parks.Load() != p {
		return l, false
	}
	for i := range buf {
		if buf[i].done() {
			return l, false
		}
	}
	return l, true
}

// sameLooks reports whether two looks saw the same parks (the parks
// counter identifies a park; the counts are compared for safety).
func sameLooks(a, b []look) bool {
	for i := range a {
		if a[i].parks != b[i].parks || len(a[i].recs) != len(b[i].recs) {
			return false
		}
	}
	return true
}

// declareDeadlock fails the operations the ranks are parked on with
// ErrDeadlock and records the report.
//
// w.mu keeps an abort's sweep out until the operations are out of their
// queues: every rank is still parked while they are described and
// unqueued, so none of them can have been completed and recycled. Only
// then are they completed: a rank that wakes may go on and reuse its
// requests.
func (w *World) declareDeadlock(looks []look) {
	w.mu.Lock()
	if w.state.Load() != stateRunning {
		w.mu.Unlock()
		return // an abort came first and completes everything
	}
	for i, l := range looks {
		if w.eps[i].parks.Load() != l.parks {
			w.mu.Unlock()
			return // woken meanwhile after all
		}
	}
	d := &DeadlockError{Ranks: make([]PendingRank, len(w.eps))}
	var fail []*Request
	for i := range w.eps {
		d.Ranks[i] = w.eps[i].Pending()
		for _, wr := range looks[i].recs {
			wr.each(func(r *Request) {
				if r.fired() || r.in == nil || !r.in.unqueue(r) {
					return
				}
				fail = append(fail, r)
			})
		}
	}
	if w.deadlock == nil {
		w.deadlock = d
	}
	w.mu.Unlock()
	for _, r := range fail {
		r.complete(Status{}, ErrDeadlock)
	}
}

// DeadlockError is the detector's report: every rank's state when it
// failed the blocked operations with ErrDeadlock (comm.DeadlockError is
// the users' error).
type DeadlockError struct {
	Ranks   []PendingRank // by world rank
	resolve sync.Once     // ResolveSites, by Deadlock
}

// PendingRank is what one rank was doing: returned, or the operations
// its parked goroutines wait for (none: running).
type PendingRank struct {
	Rank     int
	Returned bool
	Waits    []PendingWait
}

// PendingWait is one parked goroutine: where it called mpgo, and the
// operations it waits for (one, or several for WaitAny and its kin).
type PendingWait struct {
	Site // empty until ResolveSites found it
	Reqs []PendingReq
	slot *siteSlot
}

// PendingReq describes one pending operation.
type PendingReq struct {
	Kind  Kind
	Mode  Mode
	Ctx   uint64       // the communicator's context
	Owner fmt.Stringer // the communicator
	Src   int          // receive, probe: requested source or AnySource (rank in the communicator)
	To    int          // send: destination (rank in the communicator)
	Tag   int          // requested tag or AnyTag
	Bytes int          // send: payload size
	// PeerReturned: the peer (the source of a receive or probe, the
	// destination of a send) is a rank of this process that returned.
	PeerReturned bool
}

// Pending describes what ep's goroutines are waiting for now, without
// where they were called: each goroutine says that as it wakes (see
// ResolveSites). Safe to call at any time: a parked goroutine's record is
// read under the lock its wake-up takes to leave, and a request's
// description was written before it parked.
func (ep *Endpoint) Pending() PendingRank {
	pr := PendingRank{Rank: ep.rank, Returned: ep.done.Load()}
	ep.pmu.Lock()
	defer ep.pmu.Unlock()
	for _, p := range ep.parked {
		pw := PendingWait{slot: p.slotOf()}
		p.wr.each(func(r *Request) { pw.Reqs = append(pw.Reqs, ep.w.describeReq(r)) })
		pr.Waits = append(pr.Waits, pw)
	}
	return pr
}

// describeReq describes r.
func (w *World) describeReq(r *Request) PendingReq {
	_, fromLen := r.from()
	d := PendingReq{Kind: r.kind, Mode: r.mode, Ctx: r.ctx, Owner: r.owner, Src: r.src, To: int(r.to), Tag: r.tag, Bytes: len(r.buf) + fromLen}
	if p := r.peer; p >= 0 && p < len(w.eps) && w.isLocal(p) {
		d.PeerReturned = w.eps[p].done.Load()
	}
	return d
}

// AbortReport describes what the given world ranks of this process are
// doing now, then aborts the world with cause, so that every parked
// goroutine wakes and says where it was called, and waits up to wait for
// them (ResolveSites). For a process about to end: on a signal, or when a
// deadlock across processes was found.
func (w *World) AbortReport(ranks []int, cause error, wait time.Duration) []PendingRank {
	prs := make([]PendingRank, 0, len(ranks))
	for _, r := range ranks {
		prs = append(prs, w.eps[r].Pending())
	}
	w.AbortWith(cause)
	w.failSends(ranks, w.failure()) // not swept: the device holds them
	ResolveSites(prs, wait)
	return prs
}
