package typed_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// The persistent collectives, planned once and started many times with
// the buffers' contents of each start, against sequential references,
// on 1–17 and 64 ranks; started together with StartAll and waited for
// in any order.
func TestPersistentCollectives(t *testing.T) {
	for _, n := range rankCounts() {
		if n > 64 {
			continue
		}
		err := mpgo.Run(n, func(w *comm.Comm) error {
			c := typed.Of[int64](w)
			me := w.Rank()
			bc := make([]int64, 2)
			red, sum := make([]int64, 2), make([]int64, 2)
			in := make([]int64, 2)
			gath := make([]int64, 2*n)
			a2aIn, a2aOut := make([]int64, n), make([]int64, n)
			var reqs []*comm.Request
			for _, mk := range []func() (*comm.Request, error){
				func() (*comm.Request, error) { return c.BarrierInit() },
				func() (*comm.Request, error) { return c.BcastInit(bc, n-1) },
				func() (*comm.Request, error) { return c.ReduceInit(in, red, typed.Sum[int64], 0) },
				func() (*comm.Request, error) { return c.AllreduceInit(in, sum, typed.Max[int64]) },
				func() (*comm.Request, error) { return c.AllgatherInit(in, gath) },
				func() (*comm.Request, error) { return c.AlltoallInit(a2aIn, a2aOut) },
			} {
				r, err := mk()
				if err != nil {
					return err
				}
				reqs = append(reqs, r)
			}
			for it := range 5 {
				in[0], in[1] = int64(me*10+it), int64(-me)
				if me == n-1 {
					bc[0], bc[1] = int64(it), int64(it*it)
				}
				for j := range a2aIn {
					a2aIn[j] = int64(me*1000 + j*10 + it)
				}
				if err := comm.StartAll(reqs...); err != nil {
					return err
				}
				order := slices.Clone(reqs)
				if it%2 == 1 {
					slices.Reverse(order)
				}
				if err := comm.WaitAll(order...); err != nil {
					return err
				}
				if bc[0] != int64(it) || bc[1] != int64(it*it) {
					return fmt.Errorf("start %d: Bcast %v", it, bc)
				}
				if want := int64((n-1)*10 + it); sum[0] != want || sum[1] != 0 {
					return fmt.Errorf("start %d: Allreduce(max) %v, want [%d 0]", it, sum, want)
				}
				if me == 0 {
					if want := int64(10*n*(n-1)/2 + n*it); red[0] != want || red[1] != int64(-n*(n-1)/2) {
						return fmt.Errorf("start %d: Reduce %v", it, red)
					}
				}
				for r := range n {
					if gath[2*r] != int64(r*10+it) || a2aOut[r] != int64(r*1000+me*10+it) {
						return fmt.Errorf("start %d: Allgather/Alltoall from %d: %d, %d", it, r, gath[2*r], a2aOut[r])
					}
				}
			}
			for _, r := range reqs {
				if err := r.Free(); err != nil {
					return err
				}
			}
			if err := reqs[0].Start(); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("Start after Free: %v", err)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%d ranks: %v", n, err)
		}
	}
}

// A started persistent collective progresses while its rank waits on
// something else: rank 0 starts an Allreduce and then blocks in a receive
// that rank 1 sends only once its own Allreduce completed.
func TestPersistentCollectiveProgress(t *testing.T) {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		in, out := []float64{float64(w.Rank() + 1)}, make([]float64, 1)
		r, err := c.AllreduceInit(in, out, typed.Sum[float64])
		if err != nil {
			return err
		}
		if err := r.Start(); err != nil {
			return err
		}
		if w.Rank() == 0 {
			if _, err := c.Recv(make([]float64, 1), 1, 5); err != nil {
				return err
			}
		} else {
			if _, err := r.Wait(); err != nil {
				return err
			}
			if err := c.Send([]float64{1}, 0, 5); err != nil {
				return err
			}
		}
		if _, err := r.Wait(); err != nil || out[0] != 3 {
			return fmt.Errorf("Allreduce: %v, %v", out, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Every persistent collective, started many times, allocates nothing per
// start (MPI's persistent collectives are planned once): the whole run's
// allocations after a warm-up, on 2 and 4 ranks.
func TestPersistentCollectiveAllocatesNothing(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("reads the allocation counter of a whole run")
	}
	type planner func(c *typed.Comm[float64], cart *comm.Cart, in, out []float64) (*comm.Request, error)
	plans := []struct {
		name string
		mk   planner
	}{
		{"Barrier", func(c *typed.Comm[float64], _ *comm.Cart, _, _ []float64) (*comm.Request, error) {
			return c.BarrierInit()
		}},
		{"Bcast", func(c *typed.Comm[float64], _ *comm.Cart, in, _ []float64) (*comm.Request, error) {
			return c.BcastInit(in, 0)
		}},
		{"Reduce", func(c *typed.Comm[float64], _ *comm.Cart, in, out []float64) (*comm.Request, error) {
			return c.ReduceInit(in, out[:len(in)], typed.Sum[float64], 0)
		}},
		{"Allreduce", func(c *typed.Comm[float64], _ *comm.Cart, in, out []float64) (*comm.Request, error) {
			return c.AllreduceInit(in, out[:len(in)], typed.Sum[float64])
		}},
		{"Allgather", func(c *typed.Comm[float64], _ *comm.Cart, in, out []float64) (*comm.Request, error) {
			return c.AllgatherInit(in, out)
		}},
		{"Alltoall", func(c *typed.Comm[float64], _ *comm.Cart, _, out []float64) (*comm.Request, error) {
			return c.AlltoallInit(slices.Clone(out), out)
		}},
		{"NeighborAllgather", func(_ *typed.Comm[float64], cart *comm.Cart, in, out []float64) (*comm.Request, error) {
			return typed.NeighborAllgatherInit(cart, in, out[:2*len(in)])
		}},
		{"NeighborAlltoall", func(_ *typed.Comm[float64], cart *comm.Cart, in, out []float64) (*comm.Request, error) {
			return typed.NeighborAlltoallInit(cart, slices.Clone(out[:2*len(in)]), out[:2*len(in)])
		}},
		{"NeighborAlltoallv", func(_ *typed.Comm[float64], cart *comm.Cart, in, out []float64) (*comm.Request, error) {
			k := len(in)
			return typed.NeighborAlltoallvInit(cart, slices.Clone(out[:2*k]), []int{k, k}, nil, out[:2*k], []int{k, k}, nil)
		}},
	}
	const warm, iters = 100, 2000
	for _, n := range []int{2, 4} {
		for _, pc := range plans {
			var before, after runtime.MemStats
			err := mpgo.Run(n, func(w *comm.Comm) error {
				c := typed.Of[float64](w)
				cart, err := w.CartCreate([]int{n}, []bool{true}, false)
				if err != nil {
					return err
				}
				in, out := []float64{1, 2}, make([]float64, 2*n)
				r, err := pc.mk(c, cart, in, out)
				if err != nil {
					return err
				}
				for i := range warm + iters {
					if i == warm {
						if err := w.Barrier(); err != nil {
							return err
						}
						if w.Rank() == 0 {
							runtime.ReadMemStats(&before)
						}
					}
					if err := r.Start(); err != nil {
						return err
					}
					if _, err := r.Wait(); err != nil {
						return err
					}
				}
				if err := w.Barrier(); err != nil {
					return err
				}
				if w.Rank() == 0 {
					runtime.ReadMemStats(&after)
				}
				return r.Free()
			}, mpgo.WithoutDeadlockDetection())
			if err != nil {
				t.Fatalf("%s on %d ranks: %v", pc.name, n, err)
			}
			// An allocation per start would be 2000 at least; the few
			// left are the runtime's, for ranks parking (sudogs).
			if a := after.Mallocs - before.Mallocs; a > iters/20 {
				t.Errorf("%s on %d ranks: %d allocations in %d starts", pc.name, n, a, iters)
			}
		}
	}
}

// BenchmarkPersistentAllreduce: an 8-byte Allreduce on 2, 8 and 64
// ranks (more than the cores: the members sleep), planned once and
// started each iteration, beside the blocking call.
func BenchmarkPersistentAllreduce(b *testing.B) {
	for _, n := range []int{2, 8, 64} {
		for _, form := range []string{"blocking", "Start"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, form), func(b *testing.B) { allreduceLoop(b, n, false, form) })
		}
	}
}

// BenchmarkCollFreshDup: an 8-byte persistent Allreduce's start and an
// Iallreduce, each waited for at once, on 2 ranks, on the world and on a
// Dup of it that no blocking collective ran on yet (whose table is found
// through the world's: coll_nonblocking_meet.go's nbLink).
func BenchmarkCollFreshDup(b *testing.B) {
	for _, dup := range []bool{false, true} {
		for _, form := range []string{"Start", "Iallreduce"} {
			name := "world/" + form
			if dup {
				name = "dup/" + form
			}
			b.Run(name, func(b *testing.B) { allreduceLoop(b, 2, dup, form) })
		}
	}
}

// allreduceLoop times b.N 8-byte Allreduces of form on n ranks: the
// blocking call, a start of one planned once (Start), or Iallreduce, each
// waited for at once; on the world, or on a Dup of it (dup) on which no
// blocking collective runs.
func allreduceLoop(b *testing.B, n int, dup bool, form string) {
	b.ReportAllocs()
	err := mpgo.Run(n, func(w *comm.Comm) error {
		d := w
		if dup {
			var err error
			if d, err = w.Dup(); err != nil {
				return err
			}
		}
		c := typed.Of[float64](d)
		in, out := []float64{1}, make([]float64, 1)
		r, err := c.AllreduceInit(in, out, typed.Sum[float64])
		if err != nil {
			return err
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		if w.Rank() == 0 {
			b.ResetTimer()
		}
		for range b.N {
			switch form {
			case "blocking":
				err = c.Allreduce(in, out, typed.Sum[float64])
			case "Start":
				if err = r.Start(); err == nil {
					_, err = r.Wait()
				}
			default:
				var q *comm.Request
				if q, err = c.Iallreduce(in, out, typed.Sum[float64]); err == nil {
					_, err = q.Wait()
				}
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkNeighborPersistent: a halo exchange of 8 float64s each way on
// a periodic ring of n ranks (NeighborAlltoall), blocking and as a start
// of one planned once, waited for at once (osu: the slowest rank's time a
// call).
func BenchmarkNeighborPersistent(b *testing.B) {
	for _, n := range []int{2, 4} {
		for _, form := range []string{"blocking", "Start"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, form), func(b *testing.B) {
				b.ReportAllocs()
				steps := make([]func() error, n) // each rank's call
				osu(b, n, func(w *comm.Comm) error {
					cart, err := w.CartCreate([]int{n}, []bool{true}, false)
					if err != nil {
						return err
					}
					send, recv := make([]float64, 16), make([]float64, 16)
					steps[w.Rank()] = func() error { return typed.NeighborAlltoall(cart, send, recv) }
					if form == "Start" {
						r, err := typed.NeighborAlltoallInit(cart, send, recv)
						if err != nil {
							return err
						}
						steps[w.Rank()] = func() error {
							if err := r.Start(); err != nil {
								return err
							}
							_, err := r.Wait()
							return err
						}
					}
					return nil
				}, func(w *comm.Comm) error { return steps[w.Rank()]() })
			})
		}
	}
}
