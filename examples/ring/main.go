// Ring passes a token around a ring of ranks: rank r receives it from rank
// r-1 and sends it on to rank r+1 (rank n-1 back to rank 0), lap after lap,
// and every rank adds its rank number to the token's first element each
// time it holds it. After L laps on N ranks the token must be
// L·N(N-1)/2, which rank 0 checks. It shows typed point-to-point messages
// ([typed.Of][int64]) and Sendrecv.
//
// Run it with
//
//	go run ./examples/ring -np 4 -laps 3 -len 1
//
// or, as processes over TCP under MPICH's launcher,
//
//	go build -o ring ./examples/ring && mpiexec -n 4 ./ring
//
// The token is -len int64s; from 8192 of them (64 KiB, the default eager
// limit) every hop uses the rendezvous protocol instead of an eager copy.
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

const tagToken = 1

func main() {
	np := flag.Int("np", 4, "number of ranks")
	length := flag.Int("len", 1, "token length in int64s")
	laps := flag.Int("laps", 3, "times the token goes around the ring")
	flag.Parse()
	// Started plainly: -np goroutine ranks. Under mpiexec: one rank per
	// process, over TCP.
	mpgo.Main(func(world *comm.Comm) error {
		return ring(world, *length, *laps, os.Stdout)
	}, mpgo.WithRanks(*np))
}

// run passes the token around np goroutine ranks.
func run(np, length, laps int, out io.Writer) error {
	return mpgo.Run(np, func(world *comm.Comm) error {
		return ring(world, length, laps, out)
	})
}

// ring passes a token of length int64s laps times around the ranks of
// world and writes rank 0's verdict to out.
func ring(world *comm.Comm, length, laps int, out io.Writer) error {
	if length < 1 {
		return fmt.Errorf("token length %d: need at least 1", length)
	}
	if laps < 0 {
		return fmt.Errorf("%d laps: need at least 0", laps)
	}
	c := typed.Of[int64](world)
	rank, size := c.Rank(), c.Size()
	next, prev := (rank+1)%size, (rank-1+size)%size
	token := make([]int64, length)

	if rank != 0 {
		for range laps {
			if _, err := c.Recv(token, prev, tagToken); err != nil {
				return err
			}
			token[0] += int64(rank)
			if err := c.Send(token, next, tagToken); err != nil {
				return err
			}
		}
		return nil
	}

	// Rank 0 starts each lap and gets the token back at its end.
	// Sendrecv sends and receives at once: on a ring of one rank, rank 0
	// is its own neighbour, and a blocking Send to itself would wait for
	// its own Recv once the token is past the eager limit. The token
	// comes back into a second buffer (the send and receive buffers of
	// one call must not overlap).
	back := make([]int64, length)
	for range laps {
		token[0] += int64(rank) // 0: rank 0 holds it too
		if _, err := c.Sendrecv(token, next, tagToken, back, prev, tagToken); err != nil {
			return err
		}
		token, back = back, token
	}
	want := int64(laps) * int64(size) * int64(size-1) / 2
	if token[0] != want {
		return fmt.Errorf("%d ranks, %d laps: token=%d, expected %d", size, laps, token[0], want)
	}
	fmt.Fprintf(out, "ring: %d ranks, %d laps, token=%d (expected %d) ok\n", size, laps, token[0], want)
	return nil
}
