package typed_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/typed"
)

// Every non-blocking collective, all of them in flight at once with a
// blocking Allreduce among them and waited for in reverse order, against
// sequential references, on 1–17, 64 and 256 ranks.
func TestNonBlockingCollectives(t *testing.T) {
	for _, n := range rankCounts() {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			if err := mpgo.Run(n, func(w *comm.Comm) error { return nonBlockingAll(w) }); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The same across processes: 3 processes of 2 ranks joined by the
// in-memory loopback device (the point-to-point algorithms over a device).
func TestNonBlockingCollectivesProcesses(t *testing.T) {
	layout := devicetest.Blocks(3, 2)
	devs, _ := devicetest.Loopbacks(3, layout, comm.DefaultEagerLimit)
	errs, err := devicetest.Run(devs, layout, 0, nonBlockingAll)
	if err != nil {
		t.Fatal(err)
	}
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

func nonBlockingAll(w *comm.Comm) error {
	c := typed.Of[int64](w)
	n, me := w.Size(), w.Rank()
	const k, root = 3, 0
	val := func(r, j int) int64 { return int64(r*1000 + j) }
	mine := func(m int) []int64 {
		s := make([]int64, m)
		for j := range s {
			s[j] = val(me, j)
		}
		return s
	}
	// Rank i sends i%3+1 elements in the v-forms.
	counts := make([]int, n)
	displs := make([]int, n)
	total := 0
	for i := range counts {
		counts[i], displs[i] = i%3+1, total
		total += counts[i]
	}
	var (
		reqs    []*comm.Request
		checks  []func() error
		startOK = func(r *comm.Request, err error) error {
			reqs = append(reqs, r)
			return err
		}
	)
	gather, gatherv := make([]int64, n*k), make([]int64, total)
	scatter, scatterv := make([]int64, k), make([]int64, counts[me])
	allgather, allgatherv := make([]int64, n*k), make([]int64, total)
	alltoall, alltoallv := make([]int64, n*k), make([]int64, n*(me%3+1))
	reduce, rsb := make([]int64, k), make([]int64, k)
	scan, exscan := make([]int64, k), make([]int64, k)
	// Alltoallv: rank i sends i%3+1 elements to every rank; rank r gets
	// counts[i] from each i.
	sendv := make([]int64, n*counts[me])
	scounts, sdispls := make([]int, n), make([]int, n)
	for j := range n {
		scounts[j], sdispls[j] = counts[me], j*counts[me]
		for x := range counts[me] {
			sendv[j*counts[me]+x] = val(me, j*10+x)
		}
	}
	alltoallv = make([]int64, total)
	toAll := make([]int64, n*k)
	for j := range toAll {
		toAll[j] = val(me, j)
	}
	rootAll := make([]int64, n*k)
	rootV := make([]int64, total)
	for j := range rootAll {
		rootAll[j] = val(root, j)
	}
	for j := range rootV {
		rootV[j] = val(root, j)
	}
	for _, err := range []error{
		startOK(c.Ibarrier()),
		startOK(c.Igather(mine(k), gather, root)),
		startOK(c.Igatherv(mine(counts[me]), gatherv, counts, displs, root)),
		startOK(c.Iscatter(rootAll, scatter, root)),
		startOK(c.Iscatterv(rootV, counts, displs, scatterv, root)),
		startOK(c.Iallgather(mine(k), allgather)),
		startOK(c.Iallgatherv(mine(counts[me]), allgatherv, counts, displs)),
		startOK(c.Ialltoall(toAll, alltoall)),
		startOK(c.Ialltoallv(sendv, scounts, sdispls, alltoallv, counts, displs)),
		startOK(c.Ireduce(mine(k), reduce, typed.Sum[int64], root)),
		startOK(c.IreduceScatterBlock(mine(n*k), rsb, typed.Sum[int64])),
		startOK(c.Iscan(mine(k), scan, typed.Sum[int64])),
		startOK(c.Iexscan(mine(k), exscan, typed.Sum[int64])),
	} {
		if err != nil {
			return err
		}
	}
	// A blocking collective while they run.
	sum := []int64{int64(me)}
	if err := c.Allreduce(sum, sum, typed.Sum[int64]); err != nil {
		return err
	}
	if sum[0] != int64(n*(n-1)/2) {
		return fmt.Errorf("Allreduce among the non-blocking ones: %d", sum[0])
	}
	for i := len(reqs) - 1; i >= 0; i-- {
		if _, err := reqs[i].Wait(); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
	}
	sumOver := func(ranks int, j int) int64 {
		s := int64(0)
		for r := range ranks {
			s += val(r, j)
		}
		return s
	}
	checks = append(checks,
		func() error {
			if me != root {
				return nil
			}
			for r := range n {
				for j := range k {
					if gather[r*k+j] != val(r, j) {
						return fmt.Errorf("Igather: block %d = %v", r, gather[r*k:r*k+k])
					}
				}
				for j := range counts[r] {
					if gatherv[displs[r]+j] != val(r, j) {
						return fmt.Errorf("Igatherv: block %d = %v", r, gatherv[displs[r]:displs[r]+counts[r]])
					}
				}
			}
			for j := range k {
				if reduce[j] != sumOver(n, j) {
					return fmt.Errorf("Ireduce: %v", reduce)
				}
			}
			return nil
		},
		func() error {
			if !slices.Equal(scatter, rootAll[me*k:me*k+k]) || !slices.Equal(scatterv, rootV[displs[me]:displs[me]+counts[me]]) {
				return fmt.Errorf("Iscatter(v): %v, %v", scatter, scatterv)
			}
			for r := range n {
				for j := range k {
					if allgather[r*k+j] != val(r, j) || alltoall[r*k+j] != val(r, me*k+j) {
						return fmt.Errorf("Iallgather/Ialltoall block %d: %v, %v", r, allgather[r*k:r*k+k], alltoall[r*k:r*k+k])
					}
				}
				for j := range counts[r] {
					if allgatherv[displs[r]+j] != val(r, j) || alltoallv[displs[r]+j] != val(r, me*10+j) {
						return fmt.Errorf("Iallgatherv/Ialltoallv block %d", r)
					}
				}
			}
			for j := range k {
				if rsb[j] != sumOver(n, me*k+j) || scan[j] != sumOver(me+1, j) || me > 0 && exscan[j] != sumOver(me, j) {
					return fmt.Errorf("IreduceScatterBlock/Iscan/Iexscan: %v %v %v", rsb, scan, exscan)
				}
			}
			return nil
		})
	for _, ch := range checks {
		if err := ch(); err != nil {
			return err
		}
	}
	return nil
}

// Cancel refuses a non-blocking collective's request, which then
// completes as usual.
func TestNonBlockingCancelRefused(t *testing.T) {
	err := mpgo.Run(3, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		if w.Rank() == 1 { // joins once rank 0 tried to cancel
			if _, err := w.Recv(nil, comm.Byte, 0, 0); err != nil {
				return err
			}
		}
		out := make([]float64, 3)
		r, err := c.Iallgather([]float64{float64(w.Rank())}, out)
		if err != nil {
			return err
		}
		if w.Rank() == 0 {
			if err := r.Cancel(); !errors.Is(err, comm.ErrNotSupported) {
				return fmt.Errorf("Cancel of an Iallgather: %v", err)
			}
			if err := w.Send(nil, comm.Byte, 1, 0); err != nil {
				return err
			}
		}
		if _, err := r.Wait(); err != nil || !slices.Equal(out, []float64{0, 1, 2}) {
			return fmt.Errorf("Iallgather after a refused cancel: %v, %v", out, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A bad argument on one rank fails the non-blocking collective through
// its request, where the blocking call fails: a receive buffer too short
// at a Igather's root fails every rank's, with the root's ErrTruncate (the
// ranks agree on their arguments first); send lengths that differ between
// the ranks of an Iallgather fail every rank's.
func TestNonBlockingArgumentErrors(t *testing.T) {
	err := mpgo.Run(4, func(w *comm.Comm) error {
		c := typed.Of[int32](w)
		recv := make([]int32, 4)
		if w.Rank() == 0 {
			recv = recv[:3]
		}
		r, err := c.Igather([]int32{1}, recv, 0)
		if err != nil {
			return err
		}
		if _, err := r.Wait(); !errors.Is(err, comm.ErrTruncate) {
			return fmt.Errorf("rank %d: Igather with a short receive buffer at the root: %v", w.Rank(), err)
		}
		send := []int32{1, 2}
		if w.Rank() == 2 {
			send = send[:1]
		}
		r, err = c.Iallgather(send, make([]int32, 8))
		if err != nil {
			return err
		}
		if _, err := r.Wait(); err == nil {
			return fmt.Errorf("rank %d: Iallgather with rank 2 sending less succeeded", w.Rank())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
