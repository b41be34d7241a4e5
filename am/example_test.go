package am_test

import (
	"errors"
	"fmt"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/am"
	"github.com/mpgo/mpgo/comm"
)

// Every rank registers the same handlers; rank 0 calls each other rank's.
func Example() {
	err := mpgo.Run(3, func(w *comm.Comm) error {
		ep, err := am.New(w)
		if err != nil {
			return err
		}
		greet, err := am.Register(ep, "greet", func(from int, name string) (string, error) {
			return fmt.Sprintf("rank %d greets %s (from rank %d)", ep.Rank(), name, from), nil
		})
		if err != nil {
			return err
		}
		if w.Rank() == 0 {
			for dst := 1; dst < w.Size(); dst++ {
				s, err := greet.Call(dst, "gopher").Wait()
				if err != nil {
					return err
				}
				fmt.Println(s)
			}
		}
		return ep.Close()
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// rank 1 greets gopher (from rank 0)
	// rank 2 greets gopher (from rank 0)
}

// Posts run their handlers without a reply; Quiesce returns once every
// Post, and every Post those handlers made in turn, has been handled.
func ExampleEndpoint_Quiesce() {
	err := mpgo.Run(4, func(w *comm.Comm) error {
		ep, err := am.New(w)
		if err != nil {
			return err
		}
		count := 0 // this rank's; handlers of one endpoint run one at a time
		var relay *am.Handler[int, struct{}]
		relay, err = am.Register(ep, "relay", func(from, hops int) (struct{}, error) {
			count++
			if hops > 0 { // pass it on to the next rank
				return struct{}{}, relay.Post((ep.Rank()+1)%ep.Size(), hops-1)
			}
			return struct{}{}, nil
		})
		if err != nil {
			return err
		}
		if err := w.Barrier(); err != nil { // relay is set on every rank before one runs
			return err
		}
		if w.Rank() == 0 {
			if err := relay.Post(1, 10); err != nil { // 11 handlers, around the ring
				return err
			}
		}
		if err := ep.Quiesce(); err != nil {
			return err
		}
		if w.Rank() == 0 { // count is final here, on every rank
			fmt.Println("rank 0 ran relay", count, "times")
		}
		return ep.Close()
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// rank 0 ran relay 2 times
}

// A handler's error comes back to its caller as a HandlerError, with the
// handler's message, matching am.ErrRemote.
func ExampleFuture_Wait() {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		ep, err := am.New(w)
		if err != nil {
			return err
		}
		sqrt, err := am.Register(ep, "sqrt", func(from int, x float64) (float64, error) {
			if x < 0 {
				return 0, fmt.Errorf("sqrt of %g", x)
			}
			r := x
			for range 30 {
				r = (r + x/r) / 2
			}
			return r, nil
		})
		if err != nil {
			return err
		}
		if w.Rank() == 0 {
			v, err := sqrt.Call(1, 2).Wait()
			fmt.Printf("%.6f %v\n", v, err)
			_, err = sqrt.Call(1, -1).Wait()
			fmt.Println(errors.Is(err, am.ErrRemote), err)
		}
		return ep.Close()
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// 1.414214 <nil>
	// true am: handler "sqrt" on rank 1: sqrt of -1
}
