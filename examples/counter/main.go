// Counter hands out work items with a shared counter: rank 0 exposes one
// int64 in a window, and every rank, rank 0 included, takes the next item
// with FetchAndOp(1, Sum) until the items run out: dynamic load balancing
// without a master loop, as mpi4py's Counter does on MPI_Fetch_and_op.
// The target of the counter (rank 0) makes no call for it: passive target.
//
// Each item i is a piece of work of uneven cost (the length of the Collatz
// sequence from i+1); each rank adds up the results of the items it took,
// and a reduction gives the total, which rank 0 checks against a
// sequential run, along with how many items each rank took.
//
// Run it with
//
//	go run ./examples/counter -np 4 -items 10000
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

func main() {
	np := flag.Int("np", 4, "number of ranks")
	items := flag.Int("items", 10000, "work items to hand out")
	flag.Parse()
	mpgo.Main(func(world *comm.Comm) error {
		return counter(world, *items, os.Stdout)
	}, mpgo.WithRanks(*np))
}

// run hands out items on np goroutine ranks.
func run(np, items int, out io.Writer) error {
	return mpgo.Run(np, func(world *comm.Comm) error {
		return counter(world, items, out)
	})
}

// counter hands out items on world's ranks and writes rank 0's verdict to
// out.
func counter(world *comm.Comm, items int, out io.Writer) error {
	if items < 0 {
		return fmt.Errorf("%d items: need at least 0", items)
	}
	win, _, err := typed.AllocWindow[int64](world, 1) // the counter, on every rank; rank 0's is used
	if err != nil {
		return err
	}
	if err := win.Lock(0, false); err != nil { // shared: FetchAndOp is atomic by itself
		return err
	}
	var sum, taken int64
	for {
		i, err := win.FetchAndOp(1, 0, 0, typed.Sum[int64])
		if err != nil {
			return err
		}
		if i >= int64(items) {
			break
		}
		sum += work(i)
		taken++
	}
	if err := win.Unlock(0); err != nil {
		return err
	}
	if err := win.Free(); err != nil {
		return err
	}

	c := typed.Of[int64](world)
	total := make([]int64, 2)
	if err := c.Reduce([]int64{sum, taken}, total, typed.Sum[int64], 0); err != nil {
		return err
	}
	if world.Rank() != 0 {
		return nil
	}
	var want int64
	for i := range int64(items) {
		want += work(i)
	}
	if total[0] != want || total[1] != int64(items) {
		return fmt.Errorf("counter: total %d over %d items, want %d over %d", total[0], total[1], want, items)
	}
	_, err = fmt.Fprintf(out, "counter: %d items on %d ranks, total=%d (expected %d) ok\n", items, world.Size(), total[0], want)
	return err
}

// work is item i's piece of work: the number of steps of the Collatz
// sequence from i+1 down to 1, a cost that varies from item to item.
func work(i int64) int64 {
	n, steps := i+1, int64(0)
	for n != 1 {
		if n%2 == 0 {
			n /= 2
		} else {
			n = 3*n + 1
		}
		steps++
	}
	return steps
}
