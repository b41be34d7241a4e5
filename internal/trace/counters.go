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
	blocked    atomic.Int64 // ticks parked (Clock)
	unexpMax   atomic.Int64 // the longest one of the rank's unexpected queues was
	collective atomic.Int64 // collective calls
	_          [cacheLine]byte
}

// cacheLine is the padding that keeps one rank's counters off the cache
// lines of the data allocated beside them (another rank's).
const cacheLine = 64

// Stats are a rank's counters: the messages and bytes its point-to-point
// operations (its own, and those of the collectives it called) sent and
// received, how long its goroutines were parked waiting in mpgo, and the
// most messages from one sender that waited at once in its unexpected
// queue (arrived before their receive was posted).
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

// unexpected keeps the high-water mark of the unexpected queues, one of
// which holds n messages: a load, and a store only when the mark rises.
func (c *counters) unexpected(n int64) {
	for {
		m := c.unexpMax.Load()
		if n <= m || c.unexpMax.CompareAndSwap(m, n) {
			return
		}
	}
}

// stats returns the counters; a tick of blocked time lasts scale ns.
func (c *counters) stats(rank int, scale float64) Stats {
	return Stats{
		Rank:          rank,
		MsgsSent:      c.sentMsgs.Load(),
		BytesSent:     c.sentBytes.Load(),
		MsgsRecv:      c.recvMsgs.Load(),
		BytesRecv:     c.recvBytes.Load(),
		Collectives:   c.collective.Load(),
		Blocked:       time.Duration(float64(c.blocked.Load()) * scale),
		UnexpectedMax: c.unexpMax.Load(),
	}
}
