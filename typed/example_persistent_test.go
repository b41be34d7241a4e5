package typed_test

import (
	"fmt"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// A 1-D heat equation on 4 ranks, each holding 4 cells and a ghost cell
// at each end: the halo exchange is planned once with persistent requests
// (the ends of the line, insulated, talk to ProcNull) and started every time step.
func ExampleComm_SendInit() {
	err := mpgo.Run(4, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		me, n := w.Rank(), w.Size()
		left, right := me-1, me+1
		if left < 0 {
			left = comm.ProcNull
		}
		if right == n {
			right = comm.ProcNull
		}
		u := make([]float64, 6) // u[0] and u[5] are ghosts
		if me == 0 {
			u[1] = 100 // a hot spot at the left end
		}
		var halo []*comm.Request
		for _, plan := range []struct {
			send, recv []float64
			peer       int
		}{
			{u[1:2], u[0:1], left},
			{u[4:5], u[5:6], right},
		} {
			s, err := c.SendInit(plan.send, plan.peer, 0)
			if err != nil {
				return err
			}
			r, err := c.RecvInit(plan.recv, plan.peer, 0)
			if err != nil {
				return err
			}
			halo = append(halo, s, r)
		}
		next := make([]float64, 6)
		for range 50 {
			if err := comm.StartAll(halo...); err != nil {
				return err
			}
			if err := comm.WaitAll(halo...); err != nil {
				return err
			}
			if left == comm.ProcNull { // insulated ends: no heat flows out
				u[0] = u[1]
			}
			if right == comm.ProcNull {
				u[5] = u[4]
			}
			for i := 1; i <= 4; i++ {
				next[i] = u[i] + 0.25*(u[i-1]-2*u[i]+u[i+1])
			}
			copy(u[1:5], next[1:5])
		}
		total := []float64{u[1] + u[2] + u[3] + u[4]}
		if err := c.Allreduce(total, total, typed.Sum[float64]); err != nil {
			return err
		}
		if me == n-1 {
			fmt.Printf("heat in the line: %.1f; at the far end: %.1f\n", total[0], u[4])
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: heat in the line: 100.0; at the far end: 0.2
}
