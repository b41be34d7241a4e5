package comm_test

import (
	"errors"
	"fmt"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// A communicator named with SetName is called by that name in a deadlock
// report (and in errors).
func ExampleComm_SetName() {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		halo, err := w.Dup()
		if err != nil {
			return err
		}
		if err := halo.SetName("halo"); err != nil {
			return err
		}
		_, err = halo.Recv(nil, comm.Byte, 1-halo.Rank(), 0) // both receive: a deadlock
		return err
	})
	var d *comm.DeadlockError
	if errors.As(err, &d) {
		for _, p := range d.Pending {
			fmt.Printf("rank %d: %s\n", p.Rank, p.Op)
		}
	}
	// Output:
	// rank 0: Recv(src=1, tag=0) on halo at name_test.go:22
	// rank 1: Recv(src=0, tag=0) on halo at name_test.go:22
}
