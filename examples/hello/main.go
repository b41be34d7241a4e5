// Hello is the smallest mpgo program: every rank says hello, and rank 0
// prints the greetings in rank order, then "ok" once all ranks have met at
// a barrier. It shows [mpgo.Run], Rank and Size, sending any Go value with
// SendValue/RecvValue, and Barrier.
//
// Run it with
//
//	go run ./examples/hello -np 4
//
// The ranks are goroutines of one process. Gathering the lines at one rank
// keeps the output deterministic: if every rank printed its own line, the
// order would change from run to run.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

const tagHello = 1

func main() {
	np := flag.Int("np", 4, "number of ranks")
	flag.Parse()
	// Started plainly: -np goroutine ranks. Under mpiexec: one rank per
	// process, over TCP.
	mpgo.Main(func(world *comm.Comm) error {
		return hello(world, os.Stdout)
	}, mpgo.WithRanks(*np))
}

// run greets from np goroutine ranks.
func run(np int, out io.Writer) error {
	return mpgo.Run(np, func(world *comm.Comm) error {
		return hello(world, out)
	})
}

// hello greets from every rank of world; rank 0 writes the greetings to
// out.
func hello(world *comm.Comm, out io.Writer) error {
	rank, size := world.Rank(), world.Size()
	line := fmt.Sprintf("hello from rank %d of %d", rank, size)
	if rank != 0 {
		if err := world.SendValue(line, 0, tagHello); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(out, line)
		for r := 1; r < size; r++ {
			var s string
			if _, err := world.RecvValue(&s, r, tagHello); err != nil {
				return err
			}
			fmt.Fprintln(out, s)
		}
	}
	if err := world.Barrier(); err != nil {
		return err
	}
	if rank == 0 {
		fmt.Fprintln(out, "ok")
	}
	return nil
}
