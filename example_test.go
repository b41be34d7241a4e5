package mpgo_test

import (
	"fmt"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

func ExampleRun() {
	err := mpgo.Run(4, func(w *comm.Comm) error {
		c := typed.Of[int](w)
		if w.Rank() != 0 {
			return c.Send([]int{w.Rank() * w.Rank()}, 0, 0)
		}
		sum := 0
		buf := make([]int, 1)
		for i := 1; i < w.Size(); i++ {
			if _, err := c.Recv(buf, comm.AnySource, 0); err != nil {
				return err
			}
			sum += buf[0]
		}
		fmt.Println("sum of squares:", sum)
		return nil
	})
	fmt.Println("error:", err)
	// Output:
	// sum of squares: 14
	// error: <nil>
}

func ExampleRun_deadlock() {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		// Both ranks receive first: MPI would hang, mpgo reports.
		_, err := typed.Of[float64](w).Recv(make([]float64, 1), 1-w.Rank(), 0)
		return err
	})
	fmt.Println(err)
	// Output:
	// comm: deadlock: every live rank is blocked:
	//   rank 0: Recv(src=1, tag=0) on world at example_test.go:37
	//   rank 1: Recv(src=0, tag=0) on world at example_test.go:37
}

func Example_sendRecv() {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		if w.Rank() == 0 {
			return c.Send([]float64{1.5, 2.5, 3.5}, 1, 7)
		}
		buf := make([]float64, 8)
		st, err := c.Recv(buf, 0, comm.AnyTag)
		fmt.Println(buf[:st.Count], "from rank", st.Source, "tag", st.Tag)
		return err
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: [1.5 2.5 3.5] from rank 0 tag 7
}

func Example_isendWait() {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[int32](w)
		peer := 1 - w.Rank()
		in := make([]int32, 1)
		r, err := c.Irecv(in, peer, 0)
		if err != nil {
			return err
		}
		s, err := c.Isend([]int32{int32(10 + w.Rank())}, peer, 0)
		if err != nil {
			return err
		}
		if err := comm.WaitAll(r, s); err != nil {
			return err
		}
		if w.Rank() == 0 {
			fmt.Println("rank 0 got", in[0])
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: rank 0 got 11
}

func Example_sendOwned() {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		if w.Rank() == 0 {
			big := make([]float64, 1<<20)
			big[0] = 42
			return c.SendOwned(big, 1, 0) // big now belongs to rank 1
		}
		got, st, err := c.RecvOwned(0, 0) // the very slice rank 0 sent: no copy
		fmt.Println(st.Count, got[0])
		return err
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: 1048576 42
}

func Example_sendValue() {
	type job struct {
		Name  string
		Sizes []int
	}
	err := mpgo.Run(2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			return w.SendValue(job{"fft", []int{64, 64}}, 1, 0)
		}
		var j job
		_, err := w.RecvValue(&j, 0, 0)
		fmt.Printf("%+v\n", j)
		return err
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: {Name:fft Sizes:[64 64]}
}
