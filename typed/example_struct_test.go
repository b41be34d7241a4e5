package typed_test

import (
	"fmt"
	"reflect"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// Body is a struct element type: numbers (and padding) only, so slices of
// it travel as their memory.
type Body struct {
	Pos, Vel [3]float64
	Mass     float64
	ID       int32
}

// Every rank owns a different number of bodies; Allgatherv gives every
// rank all of them, in rank order, as MPI_Allgatherv does with a derived
// datatype.
func ExampleComm_Allgatherv() {
	err := mpgo.Run(3, func(w *comm.Comm) error {
		c := typed.Of[Body](w)
		mine := make([]Body, w.Rank()+1) // rank r owns r+1 bodies
		for i := range mine {
			id := int32(10*w.Rank() + i)
			mine[i] = Body{Pos: [3]float64{float64(id), 0, 0}, Mass: 1, ID: id}
		}
		counts := []int{1, 2, 3}
		all := make([]Body, 6)
		if err := c.Allgatherv(mine, all, counts, nil); err != nil {
			return err
		}
		if w.Rank() == 2 {
			for _, b := range all {
				fmt.Println(b.ID, b.Pos[0])
			}
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// 0 0
	// 10 10
	// 11 11
	// 20 20
	// 21 21
	// 22 22
}

// A type that cannot travel as its memory (here, a string field) is
// refused: comm.TypeOf says why, and typed.Of panics with that error.
func ExampleOf_rejected() {
	type labelled struct {
		X     float64
		Label string
	}
	_, err := comm.TypeOf(reflect.TypeFor[labelled]())
	fmt.Println(err)
	// Output: comm: typed_test.labelled cannot be an element type: Label (string) is a string: comm: element type mismatch
}
