package comm_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/mpgo/mpgo/comm"
)

// Counts and displacements whose size in bytes overflows an int, or whose
// blocks overrun the buffer, fail with ErrArg where they are passed (every
// rank, when the collective shares memory), never with a panic, a hang or
// a block written over another; the communicator works afterwards
// (outcome checks with an Allreduce).
func TestCollVectorOverflow(t *testing.T) {
	const n = 3
	const f8 = comm.Float64 // 8 bytes: 1<<61 elements wrap to 0
	// wrapping displacements and counts, as issue 23 found them
	for _, c := range []struct {
		name   string
		coll   comm.Collective
		bad    int // the rank whose arguments overflow (the root for gatherv and scatterv)
		counts []int
		displs []int
		t      comm.Type
	}{
		{"gatherv/displ 1<<61", comm.CollGather, 0, []int{1, 1, 1}, []int{0, 1, 1 << 61}, f8},
		{"gatherv/displ 1<<61-1", comm.CollGather, 0, []int{1, 1, 1}, []int{0, 1, 1<<61 - 1}, f8},
		{"gatherv/count 1<<61+1", comm.CollGather, 0, []int{1, 1, 1<<61 + 1}, []int{0, 1, 2}, f8},
		{"gatherv/displ+count", comm.CollGather, 0, []int{1, 1, 2}, []int{0, 1, math.MaxInt - 1}, comm.Byte},
		{"scatterv/displ 1<<61", comm.CollScatter, 0, []int{1, 1, 1}, []int{0, 1, 1 << 61}, f8},
		{"scatterv/count 1<<61+1", comm.CollScatter, 0, []int{1, 1, 1<<61 + 1}, []int{0, 1, 2}, f8},
		{"allgatherv/displ 1<<60", comm.CollAllgather, 1, []int{1, 1, 1}, []int{0, 1, 1 << 60}, comm.Complex128},
		{"alltoallv/displ 1<<60", comm.CollAlltoall, 1, []int{1, 1, 1}, []int{0, 1, 1 << 60}, comm.Complex128},
		{"alltoallv/count 1<<61+1", comm.CollAlltoall, 2, []int{1, 1, 1<<61 + 1}, nil, f8},
	} {
		for _, nb := range []bool{false, true} {
			name := c.name
			if nb {
				name += "/non-blocking"
			}
			t.Run(name, func(t *testing.T) {
				res := outcome(t, n, c.coll, func(w *comm.Comm) error {
					me := w.Rank()
					esz := c.t.Size()
					counts, displs := []int{1, 1, 1}, []int{0, 1, 2}
					if me == c.bad {
						counts, displs = c.counts, c.displs
					}
					one, three := garbage(esz), garbage(3*esz)
					var r *comm.Request
					var err error
					switch c.coll {
					case comm.CollGather:
						if nb {
							r, err = w.Igatherv(one, three, counts, displs, c.t, 0)
						} else {
							err = w.Gatherv(one, three, counts, displs, c.t, 0)
						}
					case comm.CollScatter:
						if nb {
							r, err = w.Iscatterv(three, counts, displs, one, c.t, 0)
						} else {
							err = w.Scatterv(three, counts, displs, one, c.t, 0)
						}
					case comm.CollAllgather:
						if nb {
							r, err = w.Iallgatherv(one, three, counts, displs, c.t)
						} else {
							err = w.Allgatherv(one, three, counts, displs, c.t)
						}
					case comm.CollAlltoall:
						// the receive side: rank bad's counts and displacements
						rc, rd := []int{1, 1, 1}, []int{0, 1, 2}
						if nb {
							r, err = w.Ialltoallv(garbage(3*esz), rc, rd, three, counts, displs, c.t)
						} else {
							err = w.Alltoallv(garbage(3*esz), rc, rd, three, counts, displs, c.t)
						}
					}
					if err == nil && r != nil {
						_, err = r.Wait()
					}
					return err
				})
				for alg, errs := range res {
					if err := errs[c.bad]; !errors.Is(err, comm.ErrArg) {
						t.Errorf("%v: rank %d: %v, want ErrArg", alg, c.bad, err)
					}
				}
				if c.coll == comm.CollGather || c.coll == comm.CollScatter {
					expect(t, res, comm.ErrArg, c.bad) // the root's arguments: a failure of the others is ErrArg too
				}
			})
		}
	}
}

// A count's or a displacement's overflow is reported by name.
func TestCollVectorOverflowMessage(t *testing.T) {
	run(t, 1, func(w *comm.Comm) error {
		err := w.Gatherv(garbage(8), garbage(8), []int{1}, []int{1 << 61}, comm.Float64, 0)
		if !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("Gatherv with a displacement of 1<<61 Float64: %v, want ErrArg", err)
		}
		return nil
	})
}
