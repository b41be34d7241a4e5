package typed_test

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/internal/job/jobtest"
	"github.com/mpgo/mpgo/typed"
)

// BenchmarkOverlap is osu_iallreduce's and osu_ialltoall's overlap
// figure (OSU Micro-Benchmarks 7): every rank times the non-blocking
// collective started and waited for at once (pure), then started, a
// computation of that same length, and waited for (total); overlap % =
// 100·(1 − (total − compute)/pure): 100 when the collective progressed
// entirely behind the computation, 0 when it progressed only in Wait. The
// metric is rank 0's; ns/op is one start-compute-wait round.
//
// It runs on 4 goroutine ranks of this process, and on 2 processes over
// TCP: this test binary started twice with Open MPI's environment and an
// MPGO_ROOT rendezvous, so that no launcher is needed. Beside the
// goroutine ranks, raw is the same figure for plain Go: 4 goroutines each
// start a goroutine that does the collective's copies (the sum of the
// blocks, or the moves of the blocks, reading the others' send buffers),
// the floor set by how soon the Go scheduler runs a new goroutine on an
// idle core while its creator computes.
//
// The computation is a busy loop, as OSU's dummy_compute: where ranks
// outnumber cores (4 ranks on a 2-core machine) the collective can only
// progress on a core a computing rank leaves, so the figure says how much
// spare core time the machine has as much as how well the collective
// progresses.
//
//	go test -run x -bench Overlap -benchtime 20x ./typed/
func BenchmarkOverlap(b *testing.B) {
	const size = 1 << 20
	for _, name := range []string{"Iallreduce", "Ialltoall"} {
		b.Run(fmt.Sprintf("%s/n=4/%dKiB", name, size>>10), func(b *testing.B) {
			var res overlapResult
			err := mpgo.Run(4, func(w *comm.Comm) error {
				r, err := overlapRounds(w, name, size, b.N, func() { b.ResetTimer() })
				if w.Rank() == 0 {
					res = r
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			res.report(b)
		})
		b.Run(fmt.Sprintf("%s/n=4/%dKiB/raw", name, size>>10), func(b *testing.B) {
			rawOverlap(b, 4, name, size)
		})
		b.Run(fmt.Sprintf("%s/procs=2/%dKiB", name, size>>10), func(b *testing.B) {
			res, err := overlapProcs(2, name, size, b.N)
			if err != nil {
				b.Fatal(err)
			}
			res.report(b)
		})
	}
}

// overlapResult is one rank's mean round times.
type overlapResult struct{ pure, total, compute time.Duration }

func (r overlapResult) report(b *testing.B) {
	b.ReportMetric(max(100*(1-float64(r.total-r.compute)/float64(r.pure)), 0), "overlap-%")
	b.ReportMetric(float64(r.pure.Nanoseconds()), "pure-ns")
	b.ReportMetric(float64(r.total.Nanoseconds()), "ns/op")
}

// overlapRounds times iters pure rounds, then iters rounds with a
// computation as long as a pure round, on every rank of w. reset is called
// by rank 0 between the two.
func overlapRounds(w *comm.Comm, name string, size, iters int, reset func()) (overlapResult, error) {
	c := typed.Of[float64](w)
	send, recv := make([]float64, size/8), make([]float64, size/8)
	start := func() (func() error, error) {
		var r *comm.Request
		var err error
		if name == "Iallreduce" {
			r, err = c.Iallreduce(send, recv, typed.Sum[float64])
		} else {
			r, err = c.Ialltoall(send, recv)
		}
		if err != nil {
			return nil, err
		}
		return func() error { _, err := r.Wait(); return err }, nil
	}
	return timeOverlap(w.Rank() == 0, w.Barrier, start, iters, reset)
}

// timeOverlap is overlapRounds' timing on one rank: barrier separates
// rounds, start starts the operation and returns its wait.
func timeOverlap(first bool, barrier func() error, start func() (func() error, error), iters int, reset func()) (overlapResult, error) {
	round := func(work time.Duration) (time.Duration, error) {
		if err := barrier(); err != nil {
			return 0, err
		}
		t0 := time.Now()
		wait, err := start()
		if err != nil {
			return 0, err
		}
		for t1 := time.Now(); time.Since(t1) < work; {
		}
		err = wait()
		return time.Since(t0), err
	}
	mean := func(work time.Duration) (time.Duration, error) {
		var sum time.Duration
		for range iters {
			d, err := round(work)
			if err != nil {
				return 0, err
			}
			sum += d
		}
		return sum / time.Duration(iters), nil
	}
	for range 3 { // warm-up
		if _, err := round(0); err != nil {
			return overlapResult{}, err
		}
	}
	pure, err := mean(0)
	if err != nil {
		return overlapResult{}, err
	}
	if first && reset != nil {
		reset()
	}
	total, err := mean(pure)
	return overlapResult{pure, total, pure}, err
}

// rawOverlap is BenchmarkOverlap's raw Go figure on n goroutines.
func rawOverlap(b *testing.B, n int, name string, size int) {
	count := size / 8
	sends := make([][]float64, n)
	for i := range sends {
		sends[i] = make([]float64, count)
	}
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		arrived int
		gen     int
	)
	barrier := func() error {
		mu.Lock()
		defer mu.Unlock()
		if arrived++; arrived == n {
			arrived, gen = 0, gen+1
			cond.Broadcast()
			return nil
		}
		for g := gen; g == gen; {
			cond.Wait()
		}
		return nil
	}
	var res overlapResult
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recv := make([]float64, count)
			op := func() {
				if name == "Iallreduce" {
					copy(recv, sends[0])
					for _, s := range sends[1:] {
						for i, v := range s {
							recv[i] += v
						}
					}
					return
				}
				blk := count / n
				for p, s := range sends {
					copy(recv[p*blk:(p+1)*blk], s[r*blk:(r+1)*blk])
				}
			}
			start := func() (func() error, error) {
				done := make(chan struct{})
				go func() { op(); close(done) }()
				return func() error { <-done; return nil }, nil
			}
			rr, _ := timeOverlap(r == 0, barrier, start, b.N, func() { b.ResetTimer() })
			if r == 0 {
				res = rr
			}
		}()
	}
	wg.Wait()
	res.report(b)
}

// overlapEnv, set in a child process, names the measurement it runs:
// "name size iters".
const overlapEnv = "MPGO_TEST_OVERLAP"

// overlapProcs starts this test binary n times as the processes of one
// job and returns rank 0's figures.
func overlapProcs(n int, name string, size, iters int) (overlapResult, error) {
	outs, err := jobtest.Spawn(n, fmt.Sprintf("%s=%s %d %d", overlapEnv, name, size, iters))
	if err != nil {
		return overlapResult{}, err
	}
	var r overlapResult
	sc := bufio.NewScanner(strings.NewReader(outs[0]))
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "overlap %d %d %d", &r.pure, &r.total, &r.compute); err == nil {
			return r, nil
		}
	}
	return r, fmt.Errorf("process 0 printed no figures:\n%s", outs[0])
}

// overlapChild is a process of overlapProcs' job: it measures and, on
// rank 0, prints the figures. It returns the exit status.
func overlapChild(spec string) int {
	f := strings.Fields(spec)
	if len(f) != 3 {
		fmt.Fprintf(os.Stderr, "%s=%q: want name size iters\n", overlapEnv, spec)
		return 2
	}
	size, err1 := strconv.Atoi(f[1])
	iters, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: bad numbers\n", overlapEnv, spec)
		return 2
	}
	err := mpgo.Join(func(w *comm.Comm) error {
		r, err := overlapRounds(w, f[0], size, iters, nil)
		if err == nil && w.Rank() == 0 {
			fmt.Printf("overlap %d %d %d\n", r.pure, r.total, r.compute)
		}
		return err
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
