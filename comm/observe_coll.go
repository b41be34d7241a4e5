package comm

import (
	"github.com/mpgo/mpgo/comm/internal/coll"
	"github.com/mpgo/mpgo/internal/trace"
)

// A collective call in the timeline: from its entry (enter, guard.go) to
// its return (leave), named with the algorithm it picked first (pick).
// The one-collective-at-a-time rule makes one record in progress per
// communicator and rank enough: collTrace is shared by a Comm and its
// collective twin, nil when the world records nothing (the counters
// count the calls).
type collTrace struct {
	o      *trace.Rank
	on     bool // o keeps a timeline or counters (else only a record/replay log, for replay.go)
	active bool
	start  int64
	name   uint16
	alg    uint16
	bytes  int
}

// newCollTrace returns the collective recorder of a communicator of o's
// rank, nil when o is (the world records nothing).
func newCollTrace(o *trace.Rank) *collTrace {
	if o == nil {
		return nil
	}
	return &collTrace{o: o, on: o.Tracing() || o.Counting()}
}

// enter starts the record of the collective what.
func (t *collTrace) enter(what string) {
	if !t.on {
		return
	}
	t.active, t.start, t.name, t.alg, t.bytes = true, t.o.Now(), t.o.Name(what), 0, 0
}

// picked records the algorithm the call chose, for n bytes; only its
// first choice counts (a composite call chooses again for its steps).
func (t *collTrace) picked(alg coll.Algorithm, n int) {
	if t.active && t.alg == 0 {
		t.alg, t.bytes = t.o.Name(alg.String()), n
	}
}

// leave records the call, on the communicator of collective context ctx.
func (t *collTrace) leave(ctx uint64) {
	if t.active {
		t.active = false
		t.o.Collective(t.start, ctx, t.name, t.alg, t.bytes)
	}
}
