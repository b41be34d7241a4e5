package typed_test

import (
	"fmt"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// A column of a row-major matrix is a vector: one element from each row.
// The receiver takes it as a plain slice.
func ExampleVector() {
	const rows, cols = 3, 4
	column, _ := typed.Vector(rows, 1, cols) // rows blocks of 1, cols apart
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		if w.Rank() == 0 {
			m := []float64{
				0, 1, 2, 3,
				10, 11, 12, 13,
				20, 21, 22, 23,
			}
			return c.SendLayout(m[2:], column, 1, 0) // column 2
		}
		got := make([]float64, rows)
		st, err := c.Recv(got, 0, 0)
		fmt.Println(got, st.Count)
		return err
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: [2 12 22] 3
}

// The upper triangle of a matrix is an indexed layout: row i from the
// diagonal on. Sent and received through the same layout, it lands in the
// same places and the rest of the receiver's matrix is left alone.
func ExampleIndexed() {
	const n = 3
	bls, disps := make([]int, n), make([]int, n)
	for i := range n {
		bls[i], disps[i] = n-i, i*n+i // n-i elements from (i, i)
	}
	upper, _ := typed.Indexed(bls, disps)
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[int32](w)
		if w.Rank() == 0 {
			return c.SendLayout([]int32{1, 2, 3, 4, 5, 6, 7, 8, 9}, upper, 1, 0)
		}
		m := make([]int32, n*n)
		if _, err := c.RecvLayout(m, upper, 0, 0); err != nil {
			return err
		}
		for i := range n {
			fmt.Println(m[i*n : i*n+n])
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// [1 2 3]
	// [0 5 6]
	// [0 0 9]
}

// A block of a 2-D array is a subarray. Here a 2×2 block of a 4×4 grid is
// sent and received into the corner of another grid: the two layouts
// differ, the element count is the same.
func ExampleSubarray() {
	grid := []int{4, 4}
	center, _ := typed.Subarray(grid, []int{2, 2}, []int{1, 1}, typed.RowMajor)
	corner, _ := typed.Subarray(grid, []int{2, 2}, []int{0, 0}, typed.RowMajor)
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[uint8](w)
		if w.Rank() == 0 {
			g := []uint8{
				0, 0, 0, 0,
				0, 1, 2, 0,
				0, 3, 4, 0,
				0, 0, 0, 0,
			}
			return c.SendLayout(g, center, 1, 0)
		}
		g := make([]uint8, 16)
		if _, err := c.RecvLayout(g, corner, 0, 0); err != nil {
			return err
		}
		for i := range 4 {
			fmt.Println(g[4*i : 4*i+4])
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// [1 2 0 0]
	// [3 4 0 0]
	// [0 0 0 0]
	// [0 0 0 0]
}

// Repeat lays copies of a layout end to end, each an extent after the
// last, as MPI's count argument does. Pack shows what a send would carry.
func ExampleLayout_Repeat() {
	pair, _ := typed.Vector(2, 1, 2) // elements 0 and 2 of every 3
	three, _ := pair.Repeat(3)
	fmt.Println(three)
	out := make([]int, three.Count())
	n, err := typed.Pack(out, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, three)
	fmt.Println(out, n, err)
	// Output:
	// layout of 6 elements in 6 runs, extent 9
	// [0 2 3 5 6 8] 6 <nil>
}

// Unpack spreads packed elements over the places of a layout; with
// Contiguous it is a plain copy. Negative strides walk backwards.
func ExampleUnpack() {
	rev, _ := typed.Vector(4, 1, -1) // 3, 2, 1, 0
	dst := make([]float64, 4)
	n, err := typed.Unpack(dst, []float64{1, 2, 3, 4}, rev)
	fmt.Println(dst, n, err)
	// Output: [4 3 2 1] 4 <nil>
}

// IrecvLayout receives through a layout without blocking; Wait unpacks.
func ExampleComm_IrecvLayout() {
	evens, _ := typed.Vector(3, 1, 2)
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[complex128](w)
		if w.Rank() == 0 {
			return c.Send([]complex128{1i, 2i, 3i}, 1, 0)
		}
		buf := make([]complex128, evens.Extent())
		r, err := c.IrecvLayout(buf, evens, 0, 0)
		if err != nil {
			return err
		}
		st, err := r.Wait()
		fmt.Println(buf, st.Count)
		return err
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: [(0+1i) (0+0i) (0+2i) (0+0i) (0+3i)] 3
}
