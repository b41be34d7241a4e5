package comm

import (
	"fmt"
	"io"
	"time"

	"github.com/mpgo/mpgo/comm/internal/engine"
	"github.com/mpgo/mpgo/internal/trace"
)

// Observe says what a [World] records of its run (Config.Observe). The
// zero value records nothing, and costs nothing: each hook is one test of
// a pointer that is nil then.
type Observe struct {
	// Trace keeps a timeline of every rank's communication: each send,
	// receive and collective call, with its peer, tag, communicator,
	// bytes, start and end, the most recent Events of each rank (older
	// ones are overwritten). [World.WriteTrace]
	// exports it.
	Trace bool
	// Events is how many records are kept of each rank, the most recent
	// (0: 32768, of 64 bytes). They are kept in a ring per P of the
	// runtime, of Events × ⌈local ranks / GOMAXPROCS⌉ records each, which
	// holds the records of whichever ranks ran there: a rank that records
	// far more than the others on its P may keep fewer. A smaller ring is
	// cheaper to write, its lines staying in the core's cache: 4096 took
	// the timeline's cost on an 8-byte ping-pong from +13–23% to +6–13%
	// on the 2-core test VM (README, Observing a run).
	Events int
	// Stats keeps per-rank counters ([World.Stats], [Comm.Stats]).
	Stats bool
	// Record names a directory where each rank's outcomes of wildcard
	// matching are logged ([World.SaveRecord] writes them): the sender
	// each AnySource receive or probe matched, how many times Iprobe and
	// Test failed before they succeeded, which request WaitAny, TestAny
	// and WaitSome returned.
	Record string
	// Replay names a directory of such logs, whose outcomes the run is
	// forced to repeat (see the package documentation, Record and
	// replay).
	Replay string
}

// RankStats are one rank's counters (Observe.Stats): its point-to-point
// messages and bytes sent and received (its own calls and those its
// collectives made; shared-memory collectives move data without
// messages), its collective calls, how long its goroutines were parked
// waiting in mpgo, and the most messages from one sender that waited at
// once in its unexpected queue (arrived before their receive was posted).
type RankStats struct {
	Rank          int // world rank
	MsgsSent      int64
	BytesSent     int64
	MsgsRecv      int64
	BytesRecv     int64
	Collectives   int64
	Blocked       time.Duration
	UnexpectedMax int64
}

// String formats s as one line of a report.
func (s RankStats) String() string {
	return fmt.Sprintf("rank %d: sent %d msgs %d B, received %d msgs %d B, %d collectives, blocked %v, unexpected max %d",
		s.Rank, s.MsgsSent, s.BytesSent, s.MsgsRecv, s.BytesRecv, s.Collectives, s.Blocked, s.UnexpectedMax)
}

// newObserver returns the recorder of a world of n ranks configured by
// cfg, nil when it records nothing.
func newObserver(n int, cfg *Config) (*trace.Set, error) {
	if !trace.Options(cfg.Observe).On() {
		return nil, nil
	}
	proc := 0
	if cfg.Process != nil && len(cfg.Local) > 0 && cfg.Local[0] >= 0 && cfg.Local[0] < n {
		proc = cfg.Process(cfg.Local[0])
	}
	s, err := trace.NewSet(n, cfg.Local, proc, trace.Options(cfg.Observe))
	if err != nil {
		return nil, fmt.Errorf("comm: %w: %w", err, ErrArg)
	}
	return s, nil
}

// Tracing reports whether w keeps a timeline (Observe.Trace).
func (w *World) Tracing() bool {
	s := w.e().Observer()
	return s != nil && s.Options().Trace
}

// WriteTrace writes the timeline of w's ranks that run in this process
// as Chrome trace-event JSON, which ui.perfetto.dev and chrome://tracing
// open: a process per process, a track per rank, a slice per blocking
// call, an async slice per non-blocking request, a flow from each send to
// the receive that matched it, collectives named with their algorithm.
// Call it once the ranks have returned (after Close). The files of a
// job's processes merge into one with cmd/mptrace. It fails with an
// error wrapping ErrArg when w keeps no timeline.
func (w *World) WriteTrace(out io.Writer) error {
	if !w.Tracing() {
		return fmt.Errorf("comm: WriteTrace of a world that keeps no trace: %w", ErrArg)
	}
	return w.e().Observer().WriteChrome(out)
}

// Stats returns the counters of w's ranks that run in this process, by
// world rank; nil when w keeps none (Observe).
func (w *World) Stats() []RankStats {
	s := w.e().Observer()
	if s == nil {
		return nil
	}
	var out []RankStats
	for _, st := range s.Stats() {
		out = append(out, RankStats(st))
	}
	return out
}

// SaveRecord writes the logs of the outcomes of wildcard matching that w
// recorded (Observe.Record), one file per rank of this process in the
// record directory. Call it once the ranks have returned. Nothing to do,
// and nil, when w records none.
func (w *World) SaveRecord() error {
	if s := w.e().Observer(); s != nil {
		return s.SaveLogs()
	}
	return nil
}

// Stats returns the counters of c's rank so far (zero, with the rank,
// when its world keeps none: see Observe.Stats).
func (c *Comm) Stats() RankStats {
	if o := c.ep.Observer(); o != nil && o.Counting() {
		return RankStats(o.Stats())
	}
	return RankStats{Rank: c.ep.Rank()}
}

// observeComm names c in its world's timeline.
func observeComm(ep *engine.Endpoint, c *Comm) {
	if o := ep.Observer(); o != nil && o.Tracing() {
		o.NameComm(c.ctx, c.String())
	}
}
