// Taskfarm counts the primes below -n with a farm of tasks balanced by
// work stealing, on active messages (package am). All -tasks tasks (ranges
// of numbers) start on rank 0; a rank works through its own queue, newest
// first, and when it runs dry calls the "steal" handler of a random other
// rank, which hands over the older half of that rank's queue. Every
// finished task is reported to rank 0 with a Post; once all are done,
// rank 0 posts "finish" to every rank. Handlers run on each rank's
// dispatcher while its own goroutine computes, so a busy rank answers
// thieves without ever polling for them.
//
// Rank 0 checks the total against a sieve and prints it, and how many
// tasks each rank ran. Run it with
//
//	go run ./examples/taskfarm -np 4 -n 2000000 -tasks 400
//
// or, as processes over TCP under MPICH's launcher,
//
//	go build -o taskfarm ./examples/taskfarm && mpiexec -n 4 ./taskfarm
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/am"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

func main() {
	np := flag.Int("np", 4, "number of ranks")
	n := flag.Int64("n", 2_000_000, "count the primes below n")
	tasks := flag.Int("tasks", 400, "number of tasks")
	flag.Parse()
	mpgo.Main(func(world *comm.Comm) error {
		return farm(world, *n, *tasks, os.Stdout)
	}, mpgo.WithRanks(*np))
}

// run runs the farm on np goroutine ranks.
func run(np int, n int64, tasks int, out io.Writer) error {
	return mpgo.Run(np, func(world *comm.Comm) error {
		return farm(world, n, tasks, out)
	})
}

// task is a range of numbers, [Lo, Hi), whose primes to count: a
// fixed-size value, so that a slice of them travels between processes as
// its memory.
type task struct{ Lo, Hi int64 }

// queue is a rank's tasks: its own goroutine takes the newest, thieves
// (handlers, on the rank's dispatcher) the oldest half.
type queue struct {
	mu    sync.Mutex
	tasks []task
}

func (q *queue) pop() (task, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.tasks) == 0 {
		return task{}, false
	}
	t := q.tasks[len(q.tasks)-1]
	q.tasks = q.tasks[:len(q.tasks)-1]
	return t, true
}

func (q *queue) push(ts []task) {
	q.mu.Lock()
	q.tasks = append(q.tasks, ts...)
	q.mu.Unlock()
}

// stealHalf removes and returns the older half of the queue (rounded up).
func (q *queue) stealHalf() []task {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := (len(q.tasks) + 1) / 2
	stolen := append([]task(nil), q.tasks[:k]...)
	q.tasks = append(q.tasks[:0], q.tasks[k:]...)
	return stolen
}

// farm counts the primes below n in tasks tasks on world's ranks and
// writes rank 0's verdict to out.
func farm(world *comm.Comm, n int64, tasks int, out io.Writer) error {
	if n < 2 || tasks < 1 || int64(tasks) > n {
		return fmt.Errorf("taskfarm: -n %d -tasks %d: want 1 ≤ tasks ≤ n and n ≥ 2", n, tasks)
	}
	ep, err := am.New(world)
	if err != nil {
		return err
	}
	var q queue
	var stop atomic.Bool
	steal, err := am.Register(ep, "steal", func(from int, _ struct{}) ([]task, error) {
		return q.stealHalf(), nil
	})
	if err != nil {
		return err
	}
	finish, err := am.Register(ep, "finish", func(from int, _ struct{}) (struct{}, error) {
		stop.Store(true)
		return struct{}{}, nil
	})
	if err != nil {
		return err
	}
	var finished int // rank 0's count of tasks done; only its handlers touch it
	done, err := am.Register(ep, "done", func(from, k int) (struct{}, error) {
		if finished += k; finished == tasks {
			for r := range ep.Size() {
				if err := finish.Post(r, struct{}{}); err != nil {
					return struct{}{}, err
				}
			}
		}
		return struct{}{}, nil
	})
	if err != nil {
		return err
	}

	if world.Rank() == 0 { // every task starts here
		ts := make([]task, tasks)
		for i := range ts {
			ts[i] = task{n * int64(i) / int64(tasks), n * int64(i+1) / int64(tasks)}
		}
		q.push(ts)
	}
	var primes, ran, steals int64
	rng := rand.New(rand.NewPCG(uint64(world.Rank()), 42))
	idle := time.Duration(0)
	for !stop.Load() {
		if t, ok := q.pop(); ok {
			primes += countPrimes(t)
			ran++
			idle = 0
			if err := done.Post(0, 1); err != nil {
				return err
			}
			continue
		}
		if world.Size() > 1 {
			victim := rng.IntN(world.Size() - 1)
			if victim >= world.Rank() {
				victim++
			}
			got, err := steal.Call(victim, struct{}{}).Wait()
			if err != nil {
				return err
			}
			if len(got) > 0 {
				q.push(got)
				steals++
				idle = 0
				continue
			}
		}
		// Nothing here, nothing there: back off a little, up to 1 ms.
		idle = min(max(2*idle, 10*time.Microsecond), time.Millisecond)
		time.Sleep(idle)
	}
	if err := ep.Quiesce(); err != nil {
		return err
	}

	c := typed.Of[int64](world)
	total := make([]int64, 2)
	if err := c.Allreduce([]int64{primes, steals}, total, typed.Sum[int64]); err != nil {
		return err
	}
	perRank := make([]int64, world.Size())
	if err := c.Gather([]int64{ran}, perRank, 0); err != nil {
		return err
	}
	if err := ep.Close(); err != nil {
		return err
	}
	if world.Rank() != 0 {
		return nil
	}
	want := sieve(n)
	if total[0] != want {
		return fmt.Errorf("taskfarm: %d primes below %d, the sieve says %d", total[0], n, want)
	}
	fmt.Fprintf(out, "taskfarm: %d ranks, %d tasks, %d primes below %d ok\n", world.Size(), tasks, total[0], n)
	fmt.Fprintf(out, "taskfarm: tasks run per rank %v, %d steals\n", perRank, total[1])
	return nil
}

// countPrimes counts the primes in t by trial division: the work of a
// task, slow on purpose.
func countPrimes(t task) int64 {
	var k int64
	for x := max(t.Lo, 2); x < t.Hi; x++ {
		prime := true
		for d := int64(2); d*d <= x; d++ {
			if x%d == 0 {
				prime = false
				break
			}
		}
		if prime {
			k++
		}
	}
	return k
}

// sieve counts the primes below n with Eratosthenes' sieve.
func sieve(n int64) int64 {
	composite := make([]bool, n)
	var k int64
	for x := int64(2); x < n; x++ {
		if composite[x] {
			continue
		}
		k++
		for m := x * x; m < n; m += x {
			composite[m] = true
		}
	}
	return k
}
