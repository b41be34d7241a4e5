package mpgo

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mpgo/mpgo/backend/rdma"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
)

// What a run records of itself: a timeline (WithTrace, MPGO_TRACE),
// per-rank counters (WithStats, MPGO_STATS), and the outcomes of wildcard
// matching (WithRecord, WithReplay, MPGO_RECORD, MPGO_REPLAY). An option
// wins over its environment variable.

// observation is what a run records (config's part).
type observation struct {
	trace  string    // the trace file ("": none)
	events int       // ring capacity per rank (0: the default)
	stats  io.Writer // where the counters are printed (nil: nowhere)
	record string    // directory
	replay string    // directory
}

// WithTrace writes a timeline of the run to path when it ends: every
// send, receive and collective call of every rank, as Chrome trace-event
// JSON that ui.perfetto.dev opens (see [comm.World.WriteTrace]). Under a
// launcher each process writes its own file, path with the process number
// before its extension (trace.json: trace.0.json, trace.1.json, …; or in
// place of a "%p" in path), which `go run github.com/mpgo/mpgo/cmd/mptrace`
// merges into one. The environment variable MPGO_TRACE=path does the
// same, MPGO_TRACE_EVENTS=n is how many records are kept of each rank
// (see [comm.Observe]).
func WithTrace(path string) Option {
	return func(c *config) error {
		if path == "" {
			return fmt.Errorf("mpgo: WithTrace(\"\"): %w", comm.ErrArg)
		}
		c.obs.trace = path
		return nil
	}
}

// WithStats prints each rank's counters ([comm.RankStats]: messages and
// bytes sent and received, collective calls, time blocked, the
// unexpected queue's high-water mark) to w when the run ends. The
// environment variable MPGO_STATS=1 prints them to standard error.
func WithStats(w io.Writer) Option {
	return func(c *config) error {
		if w == nil {
			return fmt.Errorf("mpgo: WithStats(nil): %w", comm.ErrArg)
		}
		c.obs.stats = w
		return nil
	}
}

// WithRecord logs the outcomes of wildcard matching of each rank into
// directory dir (MPGO_RECORD=dir): which sender each AnySource receive
// and probe matched, how many polls (Iprobe, Test, TestAny) failed before
// one succeeded, which request WaitAny, TestAny and WaitSome returned.
// [WithReplay] with the same directory forces them on a later run of the
// same program and ranks, so that a non-deterministic run can be
// repeated exactly to debug it.
func WithRecord(dir string) Option {
	return func(c *config) error {
		if dir == "" {
			return fmt.Errorf("mpgo: WithRecord(\"\"): %w", comm.ErrArg)
		}
		c.obs.record = dir
		return nil
	}
}

// WithReplay forces the outcomes of wildcard matching that [WithRecord]
// logged in dir (MPGO_REPLAY=dir): each AnySource receive waits for the
// recorded sender, each poll fails as many times as it did, each WaitAny
// returns the recorded request.
func WithReplay(dir string) Option {
	return func(c *config) error {
		if dir == "" {
			return fmt.Errorf("mpgo: WithReplay(\"\"): %w", comm.ErrArg)
		}
		c.obs.replay = dir
		return nil
	}
}

// observeEnv fills what the options left unset from the environment.
func (o *observation) fromEnv(getenv func(string) string) error {
	if o.trace == "" {
		o.trace = getenv("MPGO_TRACE")
	}
	if s := getenv("MPGO_TRACE_EVENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return fmt.Errorf("mpgo: MPGO_TRACE_EVENTS=%q: want a positive number: %w", s, comm.ErrArg)
		}
		o.events = n
	}
	if o.stats == nil {
		switch s := getenv("MPGO_STATS"); s {
		case "", "0", "false":
		case "1", "true":
			o.stats = os.Stderr
		default:
			return fmt.Errorf("mpgo: MPGO_STATS=%q: want 1 or 0: %w", s, comm.ErrArg)
		}
	}
	if o.record == "" {
		o.record = getenv("MPGO_RECORD")
	}
	if o.replay == "" {
		o.replay = getenv("MPGO_REPLAY")
	}
	if o.record != "" && o.replay != "" {
		return fmt.Errorf("mpgo: both record (%s) and replay (%s): %w", o.record, o.replay, comm.ErrArg)
	}
	return nil
}

// world is what the world records.
func (o *observation) world() comm.Observe {
	return comm.Observe{Trace: o.trace != "", Events: o.events, Stats: o.stats != nil, Record: o.record, Replay: o.replay}
}

// report writes what w recorded, once its ranks returned: the trace file
// (process's own under a launcher, process ≥ 0; -1 for a single process),
// the counters (and those of the job's device dev, when it keeps some:
// the RDMA backend's; nil for none), the record logs.
func (o *observation) report(w *comm.World, process int, dev device.Device) error {
	var errs []error
	if o.trace != "" {
		errs = append(errs, writeTrace(w, tracePath(o.trace, process)))
	}
	if o.stats != nil {
		for _, s := range w.Stats() {
			_, err := fmt.Fprintf(o.stats, "mpgo stats: %v\n", s)
			errs = append(errs, err)
		}
		if d, ok := dev.(interface{ Stats() rdma.Stats }); ok {
			_, err := fmt.Fprintf(o.stats, "mpgo stats: process %d fabric: %+v\n", process, d.Stats())
			errs = append(errs, err)
		}
	}
	errs = append(errs, w.SaveRecord())
	return errors.Join(errs...)
}

// writeTrace writes w's trace to the file path.
func writeTrace(w *comm.World, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("mpgo: trace: %w", err)
	}
	err = w.WriteTrace(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mpgo: trace %s: %w", path, err)
	}
	return nil
}

// tracePath is the trace file of process (-1: the only one) for path:
// "%p" in path replaced by its number, or the number put before path's
// extension.
func tracePath(path string, process int) string {
	if process < 0 {
		return path
	}
	p := strconv.Itoa(process)
	if strings.Contains(path, "%p") {
		return strings.ReplaceAll(path, "%p", p)
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + p + ext
}
