package trace

// Rank is what one rank records: its records in the set's rings (when
// the set traces), its counters (when it counts: Options.Stats), its wildcard log
// (when the set records or replays). The engine and package comm call its methods from any
// goroutine of the rank, and a send's completion from its receiver's.
type Rank struct {
	clock Clock
	world int
	set   *Set
	trace bool // keep a timeline (in set's rings)
	log   *Log // nil: no record/replay
	count bool // keep the counters
	c     counters
}

// Now returns the set's clock, in its ticks (Clock): the start time a
// hook keeps until it records.
func (o *Rank) Now() int64 { return o.clock.Now() }

// Counting reports whether o keeps counters.
func (o *Rank) Counting() bool { return o.count }

// Tracing reports whether o keeps a timeline.
func (o *Rank) Tracing() bool { return o.trace }

// Log returns the rank's record/replay log, nil when there is none.
func (o *Rank) Log() *Log { return o.log }

// Sent records a send from start until end: on the communicator of
// context ctx, from its rank src to its rank dst (world rank dstWorld)
// with tag, of bytes. failed: it completed with an error.
func (o *Rank) Sent(start, end int64, ctx uint64, src, dst, dstWorld, tag, bytes int, async, failed bool) {
	if o.count && !failed {
		o.c.sent(int64(bytes))
	}
	if o.trace {
		o.set.write(o.world, start, end, ctx, bytes, src, dst, dstWorld, tag, OpSend, flags(async, failed))
	}
}

// CountReceived counts a receive of bytes (when o keeps counters). The
// engine counts a receive before it completes, so that its rank's Stats
// after the call returned include it, and records it in the timeline
// (Received) after: the completion wakes the receiver first.
func (o *Rank) CountReceived(bytes int) {
	if o.count {
		o.c.received(int64(bytes))
	}
}

// Received records in the timeline (when o keeps one) a receive from
// start until end that matched the message src (the sender's rank in the
// communicator of context ctx) sent with tag, of bytes.
func (o *Rank) Received(start, end int64, ctx uint64, src, tag, bytes int, async bool) {
	if o.trace {
		o.set.write(o.world, start, end, ctx, bytes, src, -1, o.world, tag, OpRecv, flags(async, false))
	}
}

// Collective records the collective call name (Set.Name) from start until
// now, run by the algorithm alg (Set.Name; 0 for none), on the
// communicator of context ctx, of bytes (the calling rank's input).
func (o *Rank) Collective(start int64, ctx uint64, name, alg uint16, bytes int) {
	if o.count {
		o.c.collective.Add(1)
	}
	if o.trace {
		o.set.writeRecord(&Record{Start: start, End: o.clock.Now(), Ctx: ctx, Bytes: int64(bytes), Src: -1, Dst: -1, DstWorld: -1,
			Rank: int32(o.world), Name: name, Alg: alg, Op: OpColl})
	}
}

// Blocked counts t ticks that a goroutine of the rank was parked.
func (o *Rank) Blocked(t int64) { o.c.blocked.Add(t) }

// Unexpected records that one of the rank's unexpected queues (one per
// sender) holds n messages.
func (o *Rank) Unexpected(n int64) {
	if o.count {
		o.c.unexpected(n)
	}
}

// Stats returns the rank's counters so far.
func (o *Rank) Stats() Stats { return o.c.stats(o.world, o.clock.Scale()) }

// Name returns the number that stands for s in the set's records.
func (o *Rank) Name(s string) uint16 { return o.set.Name(s) }

// NameComm records that the communicator of context ctx is called name.
func (o *Rank) NameComm(ctx uint64, name string) { o.set.NameComm(ctx, name) }

func flags(async, failed bool) uint8 {
	var f uint8
	if async {
		f |= FlagAsync
	}
	if failed {
		f |= FlagFailed
	}
	return f
}
