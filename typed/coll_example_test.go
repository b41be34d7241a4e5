package typed_test

import (
	"fmt"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

func ExampleComm_Bcast() {
	err := mpgo.Run(4, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		params := make([]float64, 3)
		if w.Rank() == 0 {
			params = []float64{0.5, 1e-6, 42}
		}
		if err := c.Bcast(params, 0); err != nil {
			return err
		}
		if w.Rank() == 3 {
			fmt.Println("rank 3 has", params)
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: rank 3 has [0.5 1e-06 42]
}

func ExampleComm_Allreduce() {
	err := mpgo.Run(4, func(w *comm.Comm) error {
		c := typed.Of[int](w)
		mine := []int{w.Rank(), 10 * w.Rank()}
		total := make([]int, 2)
		if err := c.Allreduce(mine, total, typed.Sum); err != nil {
			return err
		}
		if w.Rank() == 0 {
			fmt.Println("sum:", total)
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: sum: [6 60]
}

func ExampleAllreduceLoc() {
	err := mpgo.Run(4, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		local := float64((w.Rank() * 5) % 7) // 0, 5, 3, 1
		best := make([]typed.Pair[float64], 1)
		err := typed.AllreduceLoc(c, []typed.Pair[float64]{{Val: local, Idx: w.Rank()}}, best, typed.MaxLoc)
		if err != nil {
			return err
		}
		if w.Rank() == 0 {
			fmt.Printf("max %v at rank %d\n", best[0].Val, best[0].Idx)
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: max 5 at rank 1
}
