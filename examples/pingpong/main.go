// Pingpong measures point-to-point latency and bandwidth between two ranks
// the way osu_latency does: rank 0 sends a message to rank 1, which sends
// it straight back, many times over, and half the average round trip is
// the one-way latency. Ranks other than 0 and 1 stay idle.
//
// By default each message is copied once, from the sender's buffer into the
// receiver's (Send/Recv). With -owned the two ranks hand one buffer back and
// forth with SendOwned/RecvOwned and nothing is copied at all: latency then
// stays flat with the size, and the bandwidth column (size over one-way
// latency) only says what a copy would have to match.
//
// Run it with
//
//	go run ./examples/pingpong -np 2
//	go run ./examples/pingpong -np 2 -owned -sizes 1,1024,1048576 -iters 500
//
// The sender stamps every message's first and last byte with a value of
// its own for that iteration and the receiver checks both, so a lost,
// stale or truncated message fails the run.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

const (
	tagPing = 1
	tagPong = 2
)

func main() {
	np := flag.Int("np", 4, "number of ranks (at least 2; ranks other than 0 and 1 stay idle)")
	sizeList := flag.String("sizes", "1,8,1024,65536,1048576", "comma-separated message sizes in bytes")
	iters := flag.Int("iters", 0, "iterations per size (0: 1000 up to 8 KiB, 100 above)")
	owned := flag.Bool("owned", false, "hand one buffer back and forth with SendOwned/RecvOwned instead of copying")
	flag.Parse()
	sizes, err := parseSizes(*sizeList)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pingpong:", err)
		os.Exit(2)
	}
	// Started plainly: -np goroutine ranks. Under mpiexec: one rank per
	// process, over TCP.
	mpgo.Main(func(world *comm.Comm) error {
		return pingpong(world, sizes, *iters, *owned, os.Stdout)
	}, mpgo.WithRanks(*np))
}

// parseSizes parses a comma-separated list of message sizes in bytes.
func parseSizes(s string) ([]int, error) {
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("message size %q: want a number of bytes", f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// run ping-pongs on np goroutine ranks.
func run(np int, sizes []int, iters int, owned bool, out io.Writer) error {
	if np < 2 {
		return fmt.Errorf("-np %d: need at least 2 ranks", np)
	}
	return mpgo.Run(np, func(world *comm.Comm) error {
		return pingpong(world, sizes, iters, owned, out)
	})
}

// pingpong ping-pongs messages of each size between ranks 0 and 1 of
// world, iters times per size (0: a default by size); rank 0 writes a table
// of one-way latency and bandwidth to out.
func pingpong(world *comm.Comm, sizes []int, iters int, owned bool, out io.Writer) error {
	if world.Size() < 2 {
		return fmt.Errorf("%d ranks: need at least 2", world.Size())
	}
	if iters < 0 {
		return fmt.Errorf("%d iterations: need at least 0", iters)
	}
	for _, n := range sizes {
		if n < 0 {
			return fmt.Errorf("message size %d: need at least 0", n)
		}
	}
	how := "Send/Recv, one copy per message"
	if owned {
		how = "SendOwned/RecvOwned, no copy"
	}
	if world.Rank() == 0 {
		fmt.Fprintf(out, "# pingpong: ranks 0 and 1 of %d, %s\n", world.Size(), how)
		fmt.Fprintf(out, "%10s %16s %16s\n", "size(B)", "latency(µs)", "bandwidth(MB/s)")
	}
	if world.Rank() > 1 {
		return nil
	}
	p := pair{c: typed.Of[byte](world), owned: owned}
	for _, size := range sizes {
		n := iters
		if n == 0 {
			n = 1000
			if size > 8<<10 {
				n = 100
			}
		}
		d, err := p.pingpong(size, max(1, n/10), n)
		if err != nil {
			return fmt.Errorf("%d-byte messages: %w", size, err)
		}
		if world.Rank() == 0 {
			lat := d.Seconds() * 1e6 / float64(2*n) // µs, one way
			fmt.Fprintf(out, "%10d %16.2f %16.2f\n", size, lat, float64(size)/lat)
		}
	}
	return nil
}

// pair is rank 0's or rank 1's end of the ping-pong.
type pair struct {
	c     *typed.Comm[byte]
	owned bool // SendOwned/RecvOwned instead of Send/Recv
}

// pingpong makes warm+iters round trips with messages of size bytes and
// returns the time the last iters took.
func (p pair) pingpong(size, warm, iters int) (time.Duration, error) {
	buf := make([]byte, size)
	var err error
	var start time.Time
	for i := range warm + iters {
		if i == warm {
			start = time.Now()
		}
		ping, pong := byte(2*i), byte(2*i+1)
		if p.c.Rank() == 0 {
			stamp(buf, ping)
			if err := p.send(buf, 1, tagPing); err != nil {
				return 0, err
			}
			if buf, err = p.recv(buf, 1, tagPong, size, pong); err != nil {
				return 0, err
			}
		} else {
			if buf, err = p.recv(buf, 0, tagPing, size, ping); err != nil {
				return 0, err
			}
			stamp(buf, pong)
			if err := p.send(buf, 0, tagPong); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(start), nil
}

func (p pair) send(buf []byte, dst, tag int) error {
	if p.owned {
		return p.c.SendOwned(buf, dst, tag) // buf is dst's now
	}
	return p.c.Send(buf, dst, tag)
}

// recv receives a message from src, into buf or (owned) as the sender's own
// slice, checks that it is size bytes stamped with v, and returns it.
func (p pair) recv(buf []byte, src, tag, size int, v byte) ([]byte, error) {
	if p.owned {
		var err error
		if buf, _, err = p.c.RecvOwned(src, tag); err != nil {
			return nil, err
		}
	} else {
		st, err := p.c.Recv(buf, src, tag)
		if err != nil {
			return nil, err
		}
		buf = buf[:st.Count]
	}
	if len(buf) != size {
		return nil, fmt.Errorf("got %d bytes from rank %d, want %d", len(buf), src, size)
	}
	if size > 0 && (buf[0] != v || buf[size-1] != v) {
		return nil, fmt.Errorf("payload from rank %d stamped %#x…%#x, want %#x", src, buf[0], buf[size-1], v)
	}
	return buf, nil
}

// stamp marks buf's first and last byte with v.
func stamp(buf []byte, v byte) {
	if len(buf) > 0 {
		buf[0], buf[len(buf)-1] = v, v
	}
}
