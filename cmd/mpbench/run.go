package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// options are the command line's settings.
type options struct {
	min, max   int
	minSet     bool // -min given: it replaces each benchmark's own smallest size
	iters      int  // > 0: timed iterations for every size
	skip       int  // >= 0: warm-up iterations for every size
	window     int
	np         int
	reps       int
	eager      int // > 0: mpgo.WithEagerLimit
	vsMPI      bool
	mpicc      string
	mpiexec    string
	mpiTimeout time.Duration
	csv        string
	plot       string
}

// memLimit bounds the buffers one benchmark allocates over all its ranks;
// sizes beyond it are left out, with a note.
const memLimit = 4 << 30

// backend runs a rank function on n ranks: goroutines of this process
// (mpgo.Run) today, processes under a launcher once mpgo's TCP backend
// exists. The rank function needs nothing but its communicator.
type backend interface {
	run(ctx context.Context, n int, fn func(w *comm.Comm) error) error
	describe(n int) string
}

// goroutines is the shared-memory backend: n ranks as goroutines.
type goroutines struct{ opts []mpgo.Option }

func (g goroutines) run(ctx context.Context, n int, fn func(w *comm.Comm) error) error {
	return mpgo.Run(n, fn, append([]mpgo.Option{mpgo.WithContext(ctx)}, g.opts...)...)
}

func (g goroutines) describe(n int) string { return fmt.Sprintf("%d goroutine ranks (mpgo.Run)", n) }

// result is one benchmark's table: a row per message size.
type result struct {
	bench   *benchmark
	ranks   int
	window  int
	reps    int
	rows    []row
	mpi     string   // the MPI library's name for headers, "" when not run
	notes   []string // what the reader should know (sizes left out, MPI missing)
	system  string   // where mpgo ran
	machine machine  // the CPU, mpgo's version, the host and the date
	load    string   // the machine's load average when the benchmark started, if known
}

// row is one message size: every figure summarized over the repetitions.
type row struct {
	plan    iterPlan
	mpgo    [nMetrics]summary
	chanLat summary // µs, one way
	copyLat summary // µs per copy
	copyBW  summary // MB/s
	// The ratios of mpgo's figure to each baseline, paired repetition by
	// repetition (each pair measured back to back), so that a slow patch
	// of the machine moves both sides of a ratio together.
	vsChan, vsCopyLat, vsCopyBW summary
	mpi                         [nMetrics]summary
}

// baselines are one repetition's baseline figures for one size.
type baselines struct {
	chanLat         float64 // µs, one way; 0 when not measured
	copyLat, copyBW float64 // µs per copy and MB/s; 0 when not measured (and at 0 bytes)
}

// measureBaselines measures the baselines benchmark b is judged against
// for plan p: the channel ping-pong, and as many copies as the benchmark
// moves messages (window of them per iteration for the bandwidth tests).
func measureBaselines(b *benchmark, p iterPlan, window int) baselines {
	var bl baselines
	if b.chanBase {
		bl.chanLat = chanPingPong(p)
	}
	if b.copyBase && p.Size > 0 {
		per := 1
		if b.policy == bandwidthLoops {
			per = window
		}
		bl.copyLat, bl.copyBW = copyBaseline(p.Size, copyCount(p, per))
	}
	return bl
}

// runner runs benchmarks with one set of options.
type runner struct {
	o      *options
	be     backend
	prog   *progress
	tables io.Writer  // where the tables stream; nil: nowhere
	mpi    *mpiRunner // nil unless --vs-mpi found an MPI
	// mpiNote is why --vs-mpi has no MPI figures, when it has none.
	mpiNote string
}

// run measures benchmark b: o.reps repetitions of every size in one run on
// the backend, each size's baselines measured right after it, and
// summarizes. With --vs-mpi the MPI program (which repeats likewise) runs
// first, so that its figures are there when mpgo's rows are. The table
// streams to r.tables: its header before the first measurement, each row
// as soon as its last repetition is measured.
func (r *runner) run(ctx context.Context, b *benchmark) (*result, error) {
	o := r.o
	n := b.ranks(o.np)
	plans := b.plans(o)
	res := &result{bench: b, ranks: n, window: o.window, reps: o.reps, system: r.be.describe(n), load: loadAverage(), machine: thisMachine()}
	plans, dropped := fitMemory(b, plans, n)
	if len(plans) == 0 {
		return nil, fmt.Errorf("mpbench %s: no message sizes to run between -min and -max %d (within %d GiB of buffers)",
			b.name, o.max, memLimit>>30)
	}
	if dropped > 0 {
		res.notes = append(res.notes, fmt.Sprintf("%d sizes above %s left out: their buffers on %d ranks would pass %d GiB",
			dropped, human(plans[len(plans)-1].Size), n, memLimit>>30))
	}
	res.rows = make([]row, len(plans))
	for i, p := range plans {
		res.rows[i].plan = p
	}
	if o.vsMPI {
		r.addMPI(ctx, res, plans)
		r.prog.clear()
	}
	out := r.tables
	if out == nil {
		out = io.Discard
	}
	table, err := startTable(out, res)
	if err != nil {
		return nil, err
	}
	var (
		figs = make([][nMetrics][]float64, len(plans)) // per size and figure, one value a repetition
		base = make([][]baselines, len(plans))         // per size, one a repetition
	)
	h := hooks{
		repetition: func(int) { runtime.GC() }, // the last repetition's garbage is not this one's to collect
		before: func(rep, i int) {
			r.prog.show("%s: repetition %d/%d, %s (%d/%d)", b.name, rep+1, o.reps, human(plans[i].Size), i+1, len(plans))
		},
		after: func(rep, i int, s sample) {
			for _, m := range b.figures {
				figs[i][m] = append(figs[i][m], s[m])
			}
			if b.class == pointToPoint {
				base[i] = append(base[i], measureBaselines(b, plans[i], o.window))
			}
			if rep == o.reps-1 {
				summarizeRow(&res.rows[i], b, figs[i], base[i])
				r.prog.clear()
				table.row(i)
			}
		},
	}
	err = r.be.run(ctx, n, func(w *comm.Comm) error {
		_, err := measure(w, b, plans, o.window, o.reps, h)
		return err
	})
	r.prog.clear()
	if err != nil {
		return nil, fmt.Errorf("mpbench %s: %w", b.name, err)
	}
	if err := table.end(); err != nil {
		return nil, err
	}
	return res, nil
}

// summarizeRow fills rw with the summaries of one size's figures (per
// figure, one a repetition) and baselines (one a repetition).
func summarizeRow(rw *row, b *benchmark, figs [nMetrics][]float64, base []baselines) {
	for _, m := range b.figures {
		rw.mpgo[m] = summarize(figs[m])
	}
	var chanLat, copyLat, copyBW, vsChan, vsCopyLat, vsCopyBW []float64
	for rep, bl := range base {
		f := func(m metric) float64 { return figs[m][rep] }
		if bl.chanLat > 0 {
			chanLat, vsChan = append(chanLat, bl.chanLat), append(vsChan, f(mLat)/bl.chanLat)
		}
		if bl.copyLat > 0 {
			copyLat, copyBW = append(copyLat, bl.copyLat), append(copyBW, bl.copyBW)
			if b.has(mLat) {
				vsCopyLat = append(vsCopyLat, f(mLat)/bl.copyLat)
			}
			if b.has(mBW) {
				vsCopyBW = append(vsCopyBW, f(mBW)/bl.copyBW)
			}
		}
	}
	rw.chanLat, rw.copyLat, rw.copyBW = summarize(chanLat), summarize(copyLat), summarize(copyBW)
	rw.vsChan, rw.vsCopyLat, rw.vsCopyBW = summarize(vsChan), summarize(vsCopyLat), summarize(vsCopyBW)
}

// addMPI runs the C program with the same plans and adds its figures.
func (r *runner) addMPI(ctx context.Context, res *result, plans []iterPlan) {
	if r.mpi == nil {
		res.notes = append(res.notes, "--vs-mpi: "+r.mpiNote)
		return
	}
	b := res.bench
	r.prog.show("%s: running the MPI program (mpiexec -n %d)", b.name, res.ranks)
	reps, err := r.mpi.run(ctx, b.name, res.ranks, res.window, r.o.reps, plans)
	if err != nil {
		res.notes = append(res.notes, "--vs-mpi: "+err.Error())
		return
	}
	res.mpi = r.mpi.label
	for i := range res.rows {
		for _, m := range b.figures {
			var xs []float64
			for _, rep := range reps {
				xs = append(xs, rep[i][m])
			}
			res.rows[i].mpi[m] = summarize(xs)
		}
	}
	res.notes = append(res.notes, fmt.Sprintf("%s columns: %s, %d processes (mpiexec -n %d), the same definitions in C;"+
		" vs %s is the ratio of the two medians", r.mpi.label, r.mpi.version, res.ranks, res.ranks, r.mpi.label))
}

// fitMemory drops the largest sizes while benchmark b's buffers on n ranks
// would pass memLimit, and reports how many it dropped.
func fitMemory(b *benchmark, plans []iterPlan, n int) ([]iterPlan, int) {
	k := len(plans)
	for k > 0 {
		s, r := b.buffers(plans[k-1].Size, n)
		if int64(n)*int64(s+r) <= memLimit {
			break
		}
		k--
	}
	return plans[:k], len(plans) - k
}

// loadAverage returns the one-minute load average (Linux), or "" where
// the system does not tell: figures taken while other work runs are worth
// less, and the header says so.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// human writes a byte count as people read it: 512 B, 4 KiB, 64 MiB.
func human(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// progress says on stderr what runs: on a terminal a status line
// rewritten in place with \r; elsewhere (a log file, a pipe) a line at
// most every so often, so that a long run is not silent and a short one
// not chatty.
type progress struct {
	w     io.Writer     // nil: no progress
	every time.Duration // 0: the status line; else a line at most this often
	mu    sync.Mutex
	len   int       // of the status line shown, to blank it out; guarded by mu
	last  time.Time // when the last line was written; guarded by mu
}

// progressEvery is how often progress writes a line where stderr is no
// terminal.
const progressEvery = 10 * time.Second

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// show replaces the status line. Safe for concurrent use.
func (p *progress) show(format string, args ...any) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := fmt.Sprintf(format, args...)
	if p.every > 0 {
		if now := time.Now(); p.last.IsZero() || now.Sub(p.last) >= p.every {
			p.last = now
			fmt.Fprintf(p.w, "mpbench: %s\n", s)
		}
		return
	}
	n := utf8.RuneCountInString(s)
	pad := max(p.len-n, 0) // blank out the rest of a longer line
	fmt.Fprintf(p.w, "\r%s%*s", s, pad, "")
	p.len = n + pad
}

// clear erases the status line.
func (p *progress) clear() {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.every == 0 && p.len > 0 {
		fmt.Fprintf(p.w, "\r%*s\r", p.len, "")
		p.len = 0
	}
}
