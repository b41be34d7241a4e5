// Command mpbench measures mpgo with the definitions the MPI world reads
// its figures from — ports of the OSU Micro-Benchmarks 7.x (osu_latency,
// osu_bw, osu_bibw, osu_mbw_mr, osu_multi_lat, osu_bcast, osu_reduce,
// osu_allreduce, osu_allgather, osu_alltoall, osu_barrier, and the
// persistent osu_bcast_persistent, osu_reduce_persistent,
// osu_allreduce_persistent, osu_allgather_persistent,
// osu_alltoall_persistent and osu_barrier_persistent) and of IMB-MPI1
// (PingPong, PingPing, Sendrecv, Exchange) — and prints beside every figure the baselines it is judged
// against, measured in the same run.
//
// # Usage
//
//	mpbench [flags] BENCHMARK... [flags]
//
// BENCHMARK is one of latency, bw, bibw, mbw_mr, multi_lat, bcast,
// bcast_persistent, reduce, reduce_persistent, allreduce,
// allreduce_persistent, allgather, allgather_persistent, alltoall,
// alltoall_persistent, barrier, barrier_persistent, pingpong, pingping, sendrecv, exchange, or all. For example:
//
//	go run ./cmd/mpbench latency
//	go run ./cmd/mpbench bw --vs-mpi --plot bw.svg
//	go run ./cmd/mpbench all -max 1MiB -reps 3 --csv results.csv
//
// # What is reported
//
// Each benchmark runs -reps times (default 5); the tables show the median
// with the min–max of the repetitions beside it, and flag a row as noisy
// when (max-min)/median exceeds 20%. Point-to-point rows carry two
// baselines: a raw Go channel ping-pong of the []byte (one way, half the
// round trip, beside latencies) and copy() of the same size (beside
// bandwidths, and beside latencies as the time of one copy), each with the
// ratio of mpgo's figure to it. Each baseline is measured right after the
// figure it is set against, and the ratio shown is the median of the
// repetitions' ratios, so that a busy patch of a shared machine moves both
// sides of a ratio together. Bandwidths are in MB/s of 10^6 bytes per
// second, as OSU and IMB print them.
//
// With default sizes (up to 64 MiB) and 5 repetitions, latency and bw take
// a few minutes each, all well over half an hour; -max 1MiB -reps 3 gives a
// quick look. Tables stream: a benchmark's header prints when it starts,
// and each row as soon as its size's last repetition is measured (every
// repetition sweeps all sizes, so the rows come during the last sweep).
// Meanwhile stderr shows the benchmark, repetition and size being
// measured: a status line on a terminal, else a line every 10 s.
//
// With --vs-mpi, mpbench builds a small C program holding the same
// definitions (embedded in the binary) with mpicc, runs it under mpiexec
// with as many processes as mpgo had ranks, and prints the MPI library's
// figures as further columns; without mpicc and mpiexec it says so and goes
// on (the MPI program runs before mpgo's measurements, so that rows stream
// with both). --csv writes every figure in long form.
//
// --plot writes an SVG of latency and bandwidth against message size,
// log-log, with the baselines: a title with the benchmarks, ranks, mpgo's
// version, CPU, host and date; the legends under the panels, outside the
// axes; a 0-byte point drawn at ½ byte, its tick labelled 0 (a log axis
// has no 0), and the axis label saying so (or that a 0-byte bandwidth, 0,
// cannot be drawn); the y axis set by mpgo's curves and stretched at most
// tenfold towards a baseline, which is clipped beyond (copy() of a few
// bytes takes nanoseconds) with "clipped at the axis" in its legend entry.
//
// Ranks are goroutines of this process (mpgo.Run); the benchmarks are rank
// functions of a *comm.Comm, so that another backend can run them.
//
// # NPB scaling
//
//	mpbench npb [-class S] [-np 1,2,4,8] [-kernels ep,is,cg,mg,ft] [-reps 1]
//
// builds each NAS Parallel Benchmarks kernel under examples/npb that
// exists (missing ones are skipped, with a note), runs it for the class on
// each rank count, reads Time in seconds, Mop/s total and VERIFICATION from
// its output, and prints a table with the speedup against one rank (the
// ratio of Mop/s) and the parallel efficiency, a row as each run ends,
// while stderr says what builds or runs (and every 30 s that it still
// does). It fails when a run fails or does not verify. The kernels are
// built from source: from the checkout of mpgo around the working
// directory, else from the one this binary was built from (a go install
// of a checkout or of a version keeps that path), else from -dir.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/mpgo/mpgo"
)

func main() {
	if underLauncher() {
		os.Exit(runLaunched(os.Args[1:], os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	prog := &progress{w: os.Stderr, every: progressEvery}
	if isTerminal(os.Stderr) {
		prog.every = 0 // a status line, rewritten in place
	}
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, prog)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// errUsage marks a command line mpbench could not use (after it printed
// why and how).
var errUsage = errors.New("mpbench: usage")

// run is mpbench: it parses args, runs the benchmarks they name, and writes
// the tables to stdout (each row as it is measured), notes to stderr, and
// progress to prog (nil: none).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, prog *progress) error {
	if len(args) > 0 && args[0] == "npb" {
		return runNPB(ctx, args[1:], stdout, stderr)
	}
	o, names, err := parseArgs(args, stderr)
	if err != nil {
		return err
	}
	benches, err := lookup(names)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return errUsage
	}
	tables := stdout
	if o.csv == "-" {
		tables = io.Discard // the CSV is stdout's
	}
	r := &runner{o: o, prog: prog, tables: tables}
	var opts []mpgo.Option
	if o.eager > 0 {
		opts = append(opts, mpgo.WithEagerLimit(o.eager))
	}
	r.be = goroutines{opts: opts}
	if o.vsMPI {
		r.mpi, r.mpiNote = setupMPI(ctx, o.mpicc, o.mpiexec, o.mpiTimeout)
		defer r.mpi.close()
		if r.mpi == nil {
			fmt.Fprintf(stderr, "mpbench: --vs-mpi: %s; going on without\n", r.mpiNote)
		}
	}
	var (
		results []*result
		errs    []error
	)
	for _, b := range benches {
		res, err := r.run(ctx, b)
		r.prog.clear()
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		results = append(results, res) // its table streamed as it was measured
	}
	if o.csv != "" {
		if err := writeFile(o.csv, stdout, func(w io.Writer) error { return writeCSV(w, results) }); err != nil {
			errs = append(errs, err)
		}
	}
	if o.plot != "" {
		if err := writeFile(o.plot, stdout, func(w io.Writer) error { return writePlot(w, results) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeFile writes what write produces to path, or to stdout when path is
// "-".
func writeFile(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("mpbench: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("mpbench: %w", err)
	}
	return nil
}

// parseArgs reads flags and benchmark names, in any order.
func parseArgs(args []string, stderr io.Writer) (*options, []string, error) {
	o := &options{skip: -1}
	maxSize := byteSize(64 << 20)
	var minSize byteSize
	fs := flag.NewFlagSet("mpbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&minSize, "min", "smallest message size (default: 0 B for latencies, 1 B for bandwidths and collectives, 4 B for reductions)")
	fs.Var(&maxSize, "max", "largest message size: sizes double from -min up to it (suffixes K, KiB, M, MiB, G, GiB)")
	fs.IntVar(&o.iters, "iters", 0, "timed iterations for every size (default: the original's, by size)")
	fs.IntVar(&o.skip, "skip", -1, "warm-up iterations for every size (default: the original's, by size)")
	fs.IntVar(&o.window, "window", defaultWindow, "messages in flight per window (bw, bibw, mbw_mr)")
	fs.IntVar(&o.np, "np", max(2, runtime.NumCPU()), "ranks for the benchmarks that run on more than 2 (mbw_mr and multi_lat use an even number)")
	fs.IntVar(&o.reps, "reps", 5, "repetitions of every measurement: medians are reported, with min–max")
	fs.IntVar(&o.eager, "eager", 0, "mpgo's eager limit in bytes (default: mpgo's own, 64 KiB)")
	fs.BoolVar(&o.vsMPI, "vs-mpi", false, "also build and run the same benchmarks in C with mpicc and mpiexec, when installed")
	fs.StringVar(&o.mpicc, "mpicc", "mpicc", "MPI C compiler wrapper for --vs-mpi")
	fs.StringVar(&o.mpiexec, "mpiexec", "mpiexec", "MPI launcher for --vs-mpi")
	fs.DurationVar(&o.mpiTimeout, "mpi-timeout", time.Hour, "longest one MPI run may take")
	fs.StringVar(&o.csv, "csv", "", "write every figure as CSV to `file` (- for stdout, instead of the tables)")
	fs.StringVar(&o.plot, "plot", "", "write latency and bandwidth curves against the baselines as SVG to `file`")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mpbench [flags] BENCHMARK... [flags]\n\nbenchmarks:\n")
		for _, b := range benchmarks {
			fmt.Fprintf(stderr, "  %-10s %s\n", b.name, b.origin)
		}
		fmt.Fprintf(stderr, "  %-10s every one of them, in this order\n\n", "all")
		fmt.Fprintf(stderr, "or: mpbench npb [flags]  (NPB kernels' scaling table; mpbench npb -h)\n\nflags:\n")
		fs.PrintDefaults()
	}
	var names []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, nil, err
			}
			return nil, nil, errUsage
		}
		if rest = fs.Args(); len(rest) == 0 {
			break
		}
		names, rest = append(names, rest[0]), rest[1:]
	}
	o.max = int(maxSize)
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "min" {
			o.minSet, o.min = true, int(minSize)
		}
	})
	var bad []string
	switch {
	case len(names) == 0:
		bad = append(bad, "name a benchmark (or all)")
	case o.minSet && o.min > o.max:
		bad = append(bad, fmt.Sprintf("-min %d is above -max %d", o.min, o.max))
	}
	if o.iters < 0 {
		bad = append(bad, "-iters must be positive")
	}
	if o.reps < 1 {
		bad = append(bad, "-reps must be at least 1")
	}
	if o.window < 1 {
		bad = append(bad, "-window must be at least 1")
	}
	if o.np < 1 {
		bad = append(bad, "-np must be at least 1")
	}
	if o.eager < 0 {
		bad = append(bad, "-eager must not be negative")
	}
	if len(bad) > 0 {
		fmt.Fprintf(stderr, "mpbench: %s\n", strings.Join(bad, "; "))
		fs.Usage()
		return nil, nil, errUsage
	}
	return o, names, nil
}

// byteSize is a flag holding a byte count: 4096, 4K, 4KiB, 64M, 64MiB, 1G.
type byteSize int

func (s *byteSize) String() string { return strconv.Itoa(int(*s)) }

func (s *byteSize) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = byteSize(n)
	return nil
}

// parseSize reads a byte count with an optional binary suffix (K, KB, KiB,
// M, MB, MiB, G, GB, GiB, B; any case): all are powers of 1024.
func parseSize(v string) (int, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	shift := 0
	for _, suf := range []struct {
		s     string
		shift int
	}{{"kib", 10}, {"mib", 20}, {"gib", 30}, {"kb", 10}, {"mb", 20}, {"gb", 30}, {"k", 10}, {"m", 20}, {"g", 30}, {"b", 0}} {
		if t, ok := strings.CutSuffix(s, suf.s); ok {
			s, shift = strings.TrimSpace(t), suf.shift
			break
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > (1<<40)>>shift {
		return 0, fmt.Errorf("bad size %q: want a byte count such as 4096, 64KiB or 1M", v)
	}
	return n << shift, nil
}
