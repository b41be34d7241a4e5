package main

import (
	"fmt"
	"time"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// kernel runs one message size of a benchmark on one rank and returns the
// figures, which are meaningful on rank 0 only. Every rank of e.w calls it
// with the same plan.
type kernel func(e *env, p iterPlan) (sample, error)

// env is what a kernel works with on one rank: the communicator, its
// buffers (allocated once for the largest size, as the OSU benchmarks do)
// and the typed views of w whose collectives are timed. It belongs to its
// rank: not safe for concurrent use.
type env struct {
	w      *comm.Comm           // the benchmark's traffic
	aux    *comm.Comm           // results gathered to rank 0, never timed
	bytes  *typed.Comm[byte]    // byte messages; Bcast, Allgather, Alltoall
	floats *typed.Comm[float32] // Reduce, Allreduce of MPI_FLOAT with MPI_SUM, as OSU
	window int
	shared bool // the one-sided benchmarks' windows: AllocSharedWindow, not AllocWindow (MPBENCH_WIN=shared)
	sbuf   []byte
	rbuf   []byte
	fsend  []float32 // reductions' buffers (MPI_FLOAT, as OSU), instead of sbuf and rbuf
	frecv  []float32
	// reqs holds the requests of one window (two windows for bibw).
	reqs []*comm.Request
}

// newEnv sets up rank w.Rank()'s environment for benchmark b with messages
// up to maxSize bytes. Every rank of w must call it (it duplicates w).
func newEnv(w *comm.Comm, b *benchmark, maxSize, window int) (*env, error) {
	aux, err := w.Dup()
	if err != nil {
		return nil, fmt.Errorf("mpbench: duplicating the communicator: %w", err)
	}
	sn, rn := b.buffers(maxSize, w.Size())
	e := &env{
		w:      w,
		aux:    aux,
		bytes:  typed.Of[byte](w),
		floats: typed.Of[float32](w),
		window: window,
		reqs:   make([]*comm.Request, 2*window),
	}
	if b.floats {
		e.fsend, e.frecv = make([]float32, sn/4), make([]float32, rn/4)
		for i := range e.fsend {
			e.fsend[i] = 1
		}
	} else {
		e.sbuf, e.rbuf = touched(sn), touched(rn)
	}
	return e, nil
}

// touched returns n bytes with every page written, so that no timed
// iteration pays for the first touch (OSU fills its buffers too).
func touched(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a'
	}
	return b
}

// Tags of the benchmarks' messages, as the OSU and IMB sources use them.
const (
	tagData  = 1   // ping-pong messages
	tagBW    = 100 // windows of osu_bw, osu_bibw (one way) and osu_mbw_mr
	tagBack  = 10  // osu_bibw's other direction
	tagAck   = 101 // the 4-byte ack closing a window
	tagLeft  = 2   // IMB Exchange: the message that goes left
	tagRight = 3   // IMB Exchange: the message that goes right
)

// us returns d in microseconds.
func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// overRanks gathers every rank's v to rank 0 and returns there their
// minimum, mean, maximum and sum (MPI_Reduce with MPI_MIN, MPI_SUM, MPI_MAX,
// as OSU's print_stats does); other ranks get zeros. The gathering is not
// timed.
func (e *env) overRanks(v float64) (lo, avg, hi, sum float64, err error) {
	f := typed.Of[float64](e.aux)
	in, out := []float64{v}, make([]float64, 3)
	for i, op := range []typed.Op[float64]{typed.Min[float64], typed.Max[float64], typed.Sum[float64]} {
		if err := f.Reduce(in, out[i:i+1], op, 0); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	if e.aux.Rank() != 0 {
		return 0, 0, 0, 0, nil
	}
	return out[0], out[2] / float64(e.aux.Size()), out[1], out[2], nil
}

// hooks are what the driver does on rank 0 between the timed parts of a
// benchmark, while the other ranks wait: any may be nil.
type hooks struct {
	repetition func(rep int)              // before each repetition (collect garbage)
	before     func(rep, i int)           // before each size (the progress line)
	after      func(rep, i int, s sample) // after each size, with its figures (the baselines, back to back with them)
}

// measure is the rank function of a benchmark: reps repetitions of every
// plan of b, with the buffers allocated once for the largest size. It
// returns the figures of each repetition and size, meaningful on rank 0.
// It needs nothing but a communicator, so any backend can run it.
func measure(w *comm.Comm, b *benchmark, plans []iterPlan, window, reps int, h hooks) ([][]sample, error) {
	maxSize := 0
	for _, p := range plans {
		maxSize = max(maxSize, p.Size)
	}
	e, err := newEnv(w, b, maxSize, window)
	if err != nil {
		return nil, err
	}
	root := w.Rank() == 0
	out := make([][]sample, reps)
	for rep := range out {
		out[rep] = make([]sample, len(plans))
		if h.repetition != nil && root {
			h.repetition(rep)
		}
		for i, p := range plans {
			if h.before != nil && root {
				h.before(rep, i)
			}
			if err := w.Barrier(); err != nil {
				return nil, err
			}
			s, err := b.kernel(e, p)
			if err != nil {
				return nil, fmt.Errorf("%s, %d bytes: %w", b.name, p.Size, err)
			}
			out[rep][i] = s
			if h.after != nil && root {
				h.after(rep, i, s)
			}
		}
	}
	return out, nil
}
