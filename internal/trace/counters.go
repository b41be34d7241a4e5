package trace

import (
	"sync/atomic"
	"time"
)

// counters are one rank's totals (MPGO_STATS). Any goroutine may count (a
// rendezvous send completes on its receiver's goroutine); each is an
// atomic, and a rank's counters fill cache lines of their own.
type counters struct {
	_          [cacheLine]byte
	sentMsgs   atomic.Int64
	sentBytes  atomic.Int64
	recvMsgs   atomic.Int64
	recvBytes  atomic.Int64
	blocked    atomic.Int64 // nanoseconds parked
	unexp      atomic.Int64 // messages in the rank's unexpected queues now
	unexpMax   atomic.Int64 // the most there were at once
	collective atomic.Int64 // collective calls
	_          [cacheLine]byte
}

// cacheLine is the padding that keeps one rank's counters off the cache
// lines of the data allocated beside them (another rank's).
const cacheLine = 64

// Stats are a rank's counters: the messages and bytes its point-to-point
// operations (its own, and those of the collectives it called) sent and
// received, how long its goroutines were parked waiting in mpgo, and the
// most messages that waited at once in its unexpected queues (arrived
// before their receive was posted).
type Stats struct {
	Rank          int
	MsgsSent      int64
	BytesSent     int64
	MsgsRecv      int64
	BytesRecv     int64
	Collectives   int64
	Blocked       time.Duration
	UnexpectedMax int64
}

func (c *counters) sent(bytes int64) {
	c.sentMsgs.Add(1)
	c.sentBytes.Add(bytes)
}

func (c *counters) received(bytes int64) {
	c.recvMsgs.Add(1)
	c.recvBytes.Add(bytes)
}

// unexpected counts delta messages into (or out of) the unexpected
// queues, keeping the high-water mark.
func (c *counters) unexpected(delta int64) {
	n := c.unexp.Add(delta)
	for {
		m := c.unexpMax.Load()
		if n <= m || c.unexpMax.CompareAndSwap(m, n) {
			return
		}
	}
}

func (c *counters) stats(rank int) Stats {
	return Stats{
		Rank:          rank,
		MsgsSent:      c.sentMsgs.Load(),
		BytesSent:     c.sentBytes.Load(),
		MsgsRecv:      c.recvMsgs.Load(),
		BytesRecv:     c.recvBytes.Load(),
		Collectives:   c.collective.Load(),
		Blocked:       time.Duration(c.blocked.Load()),
		UnexpectedMax: c.unexpMax.Load(),
	}
}
