package comm_test

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// A halo exchange on a line of 4 ranks, each owning 3 cells of a 1-D
// field with a ghost cell at either end: Sendrecv sends the owned edge
// cell to one neighbour while it receives the other's into the ghost, so
// no pair of ranks can deadlock. At the ends of the line (a non-periodic
// Cart) the neighbour is ProcNull: the send goes nowhere and the ghost is
// left alone.
func ExampleComm_Sendrecv() {
	const n, cells, none = 4, 3, 0xff
	fields := make([][]byte, n)
	err := mpgo.Run(n, func(w *comm.Comm) error {
		line, err := w.CartCreate([]int{n}, []bool{false}, false)
		if err != nil {
			return err
		}
		left, right, err := line.Shift(0, 1)
		if err != nil {
			return err
		}
		// f[0] and f[cells+1] are the ghosts, f[1:cells+1] this rank's cells.
		f := make([]byte, cells+2)
		f[0], f[cells+1] = none, none
		for i := 1; i <= cells; i++ {
			f[i] = byte(line.Rank()*cells + i - 1)
		}
		const toRight, toLeft = 1, 2 // tags: which way a cell travels
		// My last cell goes right; my left ghost is my left neighbour's last.
		if _, err := line.Sendrecv(f[cells:cells+1], comm.Byte, right, toRight,
			f[0:1], comm.Byte, left, toRight); err != nil {
			return err
		}
		// My first cell goes left; my right ghost is my right neighbour's first.
		if _, err := line.Sendrecv(f[1:2], comm.Byte, left, toLeft,
			f[cells+1:], comm.Byte, right, toLeft); err != nil {
			return err
		}
		fields[line.Rank()] = f
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for r, f := range fields {
		fmt.Printf("rank %d: ghost %3d | %v | ghost %3d\n", r, f[0], f[1:cells+1], f[cells+1])
	}
	// Output:
	// rank 0: ghost 255 | [0 1 2] | ghost   3
	// rank 1: ghost   2 | [3 4 5] | ghost   6
	// rank 2: ghost   5 | [6 7 8] | ghost   9
	// rank 3: ghost   8 | [9 10 11] | ghost 255
}

// A receiver that does not know what comes next: Probe (from any rank,
// with any tag) tells it the message's source and tag before it receives,
// and the tag says which Go type to decode the value into. Probe's
// Status.Count is the size of the message in bytes (see [comm.Status]).
func ExampleComm_Probe() {
	const (
		tagName   = 1 // a string
		tagPoints = 2 // a []Point
	)
	type Point struct{ X, Y float64 }
	var got []string
	err := mpgo.Run(3, func(w *comm.Comm) error {
		switch w.Rank() {
		case 1:
			return w.SendValue("rank one", 0, tagName)
		case 2:
			return w.SendValue([]Point{{1, 2}, {3, 4}}, 0, tagPoints)
		}
		for range 2 {
			st, err := w.Probe(comm.AnySource, comm.AnyTag)
			if err != nil {
				return err
			}
			switch st.Tag {
			case tagName:
				var s string
				if _, err := w.RecvValue(&s, st.Source, st.Tag); err != nil {
					return err
				}
				got = append(got, fmt.Sprintf("from %d: name %q", st.Source, s))
			case tagPoints:
				var ps []Point
				if _, err := w.RecvValue(&ps, st.Source, st.Tag); err != nil {
					return err
				}
				got = append(got, fmt.Sprintf("from %d: points %v", st.Source, ps))
			}
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	slices.Sort(got) // the two may arrive in either order
	for _, g := range got {
		fmt.Println(g)
	}
	// Output:
	// from 1: name "rank one"
	// from 2: points [{1 2} {3 4}]
}

// A manager that takes results as they come: one receive posted per
// worker, WaitAny returns whichever completed first, and the manager
// handles it while the others are still on their way.
func ExampleWaitAny() {
	const workers = 3
	var order []int
	var total int
	err := mpgo.Run(workers+1, func(w *comm.Comm) error {
		if r := w.Rank(); r != 0 {
			return w.Send([]byte{byte(r * r)}, comm.Byte, 0, 0)
		}
		results := make([][]byte, workers)
		reqs := make([]*comm.Request, workers)
		for i := range reqs {
			results[i] = make([]byte, 1)
			var err error
			if reqs[i], err = w.Irecv(results[i], comm.Byte, i+1, 0); err != nil {
				return err
			}
		}
		for range workers {
			i, st, err := comm.WaitAny(reqs...)
			if err != nil {
				return err
			}
			reqs[i] = nil // done: WaitAny skips nil requests
			order = append(order, st.Source)
			total += int(results[i][0])
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	slices.Sort(order) // the completion order varies from run to run
	fmt.Println("results from", order, "sum of squares", total)
	// Output:
	// results from [1 2 3] sum of squares 14
}

// A request's Done channel in a select: the receiver waits for its
// message, or gives up after a deadline and cancels the receive, in the
// same select as any other channel of the program.
func ExampleRequest_Done() {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			return w.Send([]byte("ping"), comm.Byte, 0, 7)
		}
		buf := make([]byte, 16)
		// Tag 8 never comes: this receive times out and is cancelled.
		never, err := w.Irecv(buf, comm.Byte, 1, 8)
		if err != nil {
			return err
		}
		select {
		case <-never.Done():
			fmt.Println("unexpected message")
		case <-time.After(10 * time.Millisecond):
			if err := never.Cancel(); err != nil {
				return err
			}
			_, err := never.Wait() // the cancelled receive completes at once
			fmt.Println("tag 8: gave up after the deadline; cancelled:", errors.Is(err, comm.ErrCanceled))
		}
		req, err := w.Irecv(buf, comm.Byte, 1, 7)
		if err != nil {
			return err
		}
		select {
		case <-req.Done():
			st, err := req.Wait() // completed: Wait returns at once
			if err != nil {
				return err
			}
			fmt.Printf("tag 7: %q from rank %d\n", buf[:st.Count], st.Source)
		case <-time.After(time.Minute):
			fmt.Println("tag 7: gave up")
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// tag 8: gave up after the deadline; cancelled: true
	// tag 7: "ping" from rank 1
}

// Split makes a communicator per color: here the even and the odd ranks
// of 6, each ordered by key (descending world rank, so the order is
// reversed); a collective on the new communicator involves only its
// members.
func ExampleComm_Split() {
	const n = 6
	lines := make([]string, n)
	err := mpgo.Run(n, func(w *comm.Comm) error {
		half, err := w.Split(w.Rank()%2, -w.Rank())
		if err != nil {
			return err
		}
		sum := make([]byte, 1)
		err = half.Allreduce([]byte{byte(w.Rank())}, sum, comm.Byte,
			func(inout, in []byte) { inout[0] += in[0] })
		if err != nil {
			return err
		}
		lines[w.Rank()] = fmt.Sprintf("world rank %d: rank %d of %d in color %d, sum of its world ranks %d",
			w.Rank(), half.Rank(), half.Size(), w.Rank()%2, sum[0])
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// world rank 0: rank 2 of 3 in color 0, sum of its world ranks 6
	// world rank 1: rank 2 of 3 in color 1, sum of its world ranks 9
	// world rank 2: rank 1 of 3 in color 0, sum of its world ranks 6
	// world rank 3: rank 1 of 3 in color 1, sum of its world ranks 9
	// world rank 4: rank 0 of 3 in color 0, sum of its world ranks 6
	// world rank 5: rank 0 of 3 in color 1, sum of its world ranks 9
}
