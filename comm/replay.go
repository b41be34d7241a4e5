package comm

import (
	"fmt"

	"github.com/mpgo/mpgo/comm/internal/engine"
	"github.com/mpgo/mpgo/internal/trace"
)

// Record and replay of the outcomes of wildcard matching (Observe.Record,
// Observe.Replay; internal/trace/replay.go has the log). The hooks sit at
// the entry of the calls whose outcome depends on timing: a receive or
// probe from AnySource, Iprobe, Improbe, Test, TestAll, TestAny, WaitAny,
// WaitSome. Each tests c.ct (nil when the world records nothing) before
// anything else.

// replayLog returns the log of c's rank, nil when there is none.
func (c *Comm) replayLog() *trace.Log {
	if c == nil || c.ct == nil {
		return nil
	}
	return c.ct.o.Log()
}

// reqLog returns the log of r's rank, nil when there is none.
func reqLog(r *engine.Request) *trace.Log {
	if o := r.Observer(); o != nil {
		return o.Log()
	}
	return nil
}

// firstLog returns the log of the rank of the first request of rs that
// has one.
func firstLog(rs []*Request) *trace.Log {
	for _, r := range rs {
		if r != nil {
			return reqLog(r.e())
		}
	}
	return nil
}

// replayed returns the source a receive or probe from src posts with: in
// replay, for AnySource, the sender the recorded run matched.
func (c *Comm) replayed(src int) int {
	l := c.replayLog()
	if src != AnySource || l == nil || !l.Replaying() {
		return src
	}
	if v, ok := l.Next(trace.Sources); ok && v >= 0 && v < c.size {
		return v
	}
	return src // beyond the log, or never seen in the recording: live
}

// recording returns c's log when it records.
func (c *Comm) recording() *trace.Log {
	if l := c.replayLog(); l != nil && !l.Replaying() {
		return l
	}
	return nil
}

// pend reserves the source slot of r, a non-blocking wildcard receive
// just posted (record): filled once a Wait or Test sees it complete.
func (c *Comm) pend(r *engine.Request) {
	if l := c.recording(); l != nil && r.WildcardRecv() {
		l.Pend(r)
	}
}

// recordFinished logs the source of a blocking wildcard receive, finished
// with st and err (record).
func (c *Comm) recordFinished(st engine.Status, err error) {
	if l := c.recording(); l != nil {
		l.Add(trace.Sources, sourceOf(Status(st), err))
	}
}

// recordSource logs the sender a probe from src found (record).
func (c *Comm) recordSource(src int, st Status, err error) {
	if l := c.recording(); l != nil && src == AnySource {
		l.Add(trace.Sources, sourceOf(st, err))
	}
}

// sourceOf is the source a completed wildcard operation logs.
func sourceOf(st Status, err error) int {
	if err != nil && st.Source < 0 {
		return trace.Unknown
	}
	return st.Source
}

// seen resolves the source of r, now complete, if it is a pending
// wildcard receive (record).
func seen(r *engine.Request) {
	if l := reqLog(r); l != nil && !l.Replaying() && r.WildcardRecv() {
		st, err := r.Result()
		l.Resolve(r, sourceOf(Status(st), err))
	}
}

// pollReplay is a poll in replay: forced to fail (done false, forced
// true), forced to succeed (done true: the caller waits for success), or
// live (forced false).
func pollReplay(l *trace.Log) (done, forced bool) {
	if l == nil || !l.Replaying() {
		return false, false
	}
	return l.ForcePoll()
}

// recordPoll logs a poll's outcome (record).
func recordPoll(l *trace.Log, ok bool) {
	if l != nil && !l.Replaying() {
		l.Poll(ok)
	}
}

// testLogged is Request.Test for a rank with a log.
func (r *Request) testLogged(l *trace.Log) (Status, bool, error) {
	if done, forced := pollReplay(l); forced {
		if !done {
			return Status{}, false, nil
		}
		st, err := r.e().Wait()
		return Status(st), true, err
	}
	st, ok, err := r.e().Test()
	recordPoll(l, ok)
	if ok {
		seen(r.e())
	}
	return Status(st), ok, err
}

// waitAnyLogged is WaitAny for a rank with a log.
func waitAnyLogged(l *trace.Log, rs []*Request) (int, Status, error) {
	if l.Replaying() {
		if i, ok := l.Next(trace.Picks); ok && i >= 0 && i < len(rs) && rs[i] != nil {
			st, err := rs[i].e().Wait()
			return i, Status(st), err
		}
	}
	i, st, err := engine.WaitAny(engineReqs(rs)...)
	if !l.Replaying() && i >= 0 {
		l.Add(trace.Picks, i)
		seen(rs[i].e())
	}
	return i, Status(st), err
}

// testAnyLogged is TestAny for a rank with a log.
func testAnyLogged(l *trace.Log, rs []*Request) (int, Status, bool, error) {
	if done, forced := pollReplay(l); forced {
		if !done {
			return -1, Status{}, false, nil
		}
		i, st, err := waitAnyLogged(l, rs)
		return i, st, true, err
	}
	for i, r := range rs {
		if r == nil {
			continue
		}
		if st, ok, err := r.e().Test(); ok {
			recordPoll(l, true)
			if !l.Replaying() {
				l.Add(trace.Picks, i)
				seen(r.e())
			}
			return i, Status(st), true, err
		}
	}
	recordPoll(l, false)
	return -1, Status{}, false, nil
}

// waitSomeLogged is WaitSome for a rank with a log: the recorded count
// and indices, or the live ones logged.
func waitSomeLogged(l *trace.Log, rs []*Request) ([]int, error) {
	if l.Replaying() {
		if n, ok := l.Next(trace.Picks); ok && n > 0 && n <= len(rs) {
			done := make([]int, 0, n)
			var first error
			for range n {
				i, ok := l.Next(trace.Picks)
				if !ok || i < 0 || i >= len(rs) || rs[i] == nil {
					break
				}
				if _, err := rs[i].e().Wait(); err != nil && first == nil {
					first = err
				}
				done = append(done, i)
			}
			return done, first
		}
	}
	if !someRequest(rs) {
		return nil, fmt.Errorf("comm: WaitSome of no requests: %w", ErrArg)
	}
	engine.WaitAny(engineReqs(rs)...) //nolint:errcheck // TestSome reports the errors of those done
	done, err := TestSome(rs...)
	if !l.Replaying() {
		l.Add(trace.Picks, len(done))
		for _, i := range done {
			l.Add(trace.Picks, i)
			seen(rs[i].e())
		}
	}
	return done, err
}

// testAllLogged is TestAll for a rank with a log.
func testAllLogged(l *trace.Log, rs []*Request) (bool, error) {
	if done, forced := pollReplay(l); forced {
		if !done {
			return false, nil
		}
		return true, WaitAll(rs...)
	}
	for _, r := range rs {
		if r != nil && !r.e().Ready() {
			recordPoll(l, false)
			return false, nil
		}
	}
	recordPoll(l, true)
	return true, WaitAll(rs...)
}

// iprobeLogged is Iprobe for a rank with a log.
func (c *Comm) iprobeLogged(l *trace.Log, src, tag int) (Status, bool, error) {
	if done, forced := pollReplay(l); forced {
		if !done {
			return Status{}, false, nil
		}
		st, err := c.probe(c.replayed(src), tag)
		return st, err == nil, err
	}
	st, ok, err := c.iprobe(src, tag)
	recordPoll(l, ok)
	if ok {
		c.recordSource(src, st, err)
	}
	return st, ok, err
}

// improbeLogged is Improbe for a rank with a log.
func (c *Comm) improbeLogged(l *trace.Log, src, tag int) (*Message, Status, bool, error) {
	if done, forced := pollReplay(l); forced {
		if !done {
			return nil, Status{}, false, nil
		}
		m, st, err := c.mprobeWait(c.replayed(src), tag)
		return m, st, err == nil, err
	}
	m, st, ok, err := c.mprobe(src, tag, false)
	recordPoll(l, ok)
	if ok {
		c.recordSource(src, st, err)
	}
	return m, st, ok, err
}
