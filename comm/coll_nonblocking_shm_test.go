package comm_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mpgo/mpgo/comm"
)

// Long non-blocking Allreduces on goroutine ranks go through shared memory
// (coll_nonblocking_shm.go): against the sequential reference (affine is
// not commutative, so the rank order shows), on 1–17 and 64 ranks, four in
// flight at once (two in place) beside point-to-point traffic and a
// blocking collective, waited for in reverse order; lengths that are not
// a multiple of the parts' 64-byte unit included.
func TestIallreduceShared(t *testing.T) {
	counts := []int{4096, 4099, 9000} // 64 KiB and more of Complex128
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 64} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			run(t, n, func(w *comm.Comm) error {
				me := w.Rank()
				var reqs []*comm.Request
				var recvs [][]byte
				for k, cnt := range counts {
					recv := garbage(cnt * esz)
					r, err := w.Iallreduce(input(me, cnt, k), recv, comm.Complex128, affine)
					if err != nil {
						return err
					}
					reqs, recvs = append(reqs, r), append(recvs, recv)
				}
				inPlace := input(me, counts[0], 7)
				r, err := w.Iallreduce(inPlace, inPlace, comm.Complex128, affine)
				if err != nil {
					return err
				}
				reqs, recvs = append(reqs, r), append(recvs, inPlace)
				next, prev := (me+1)%n, (me-1+n)%n
				if _, err := w.Sendrecv(payload(8, 1), comm.Byte, next, 0, make([]byte, 8), comm.Byte, prev, 0); err != nil {
					return err
				}
				if err := w.Barrier(); err != nil {
					return err
				}
				for i := len(reqs) - 1; i >= 0; i-- {
					if _, err := reqs[i].Wait(); err != nil {
						return fmt.Errorf("request %d: %w", i, err)
					}
				}
				for k, cnt := range counts {
					if !bytes.Equal(recvs[k], fold(0, n, cnt, k)) {
						return fmt.Errorf("rank %d: Iallreduce of %d: wrong result", me, cnt)
					}
				}
				if !bytes.Equal(inPlace, fold(0, n, counts[0], 7)) {
					return fmt.Errorf("rank %d: Iallreduce in place: wrong result", me)
				}
				return nil
			})
		})
	}
}

// A rank that passes another length fails every rank's long Iallreduce,
// and one that passes overlapping buffers fails every rank's too, with
// nothing written into the others' buffers.
func TestIallreduceSharedMismatch(t *testing.T) {
	run(t, 5, func(w *comm.Comm) error {
		cnt := 5000
		if w.Rank() == 3 {
			cnt = 5001
		}
		recv := garbage(cnt * esz)
		r, err := w.Iallreduce(input(w.Rank(), cnt, 1), recv, comm.Complex128, affine)
		if err != nil {
			return err
		}
		if _, err := r.Wait(); !errors.Is(err, comm.ErrTruncate) {
			return fmt.Errorf("rank %d: mismatched Iallreduce: %v", w.Rank(), err)
		}
		if !bytes.Equal(recv, garbage(cnt*esz)) {
			return fmt.Errorf("rank %d: a failed Iallreduce wrote its receive buffer", w.Rank())
		}
		buf := input(w.Rank(), 2*5000, 2)
		send, recv := buf[:5000*esz], buf[esz:5001*esz] // overlapping on rank 1 only
		if w.Rank() != 1 {
			recv = garbage(5000 * esz)
		}
		r, err = w.Iallreduce(send, recv, comm.Complex128, affine)
		if err != nil {
			return err
		}
		if _, err := r.Wait(); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("rank %d: Iallreduce with overlapping buffers on rank 1: %v", w.Rank(), err)
		}
		return nil
	})
}

// A pinned algorithm keeps long Iallreduces on it (point-to-point), and
// ranks in several processes never share memory: both still reduce.
func TestIallreduceSharedNotTaken(t *testing.T) {
	reduce := func(w *comm.Comm) error {
		recv := garbage(5000 * esz)
		r, err := w.Iallreduce(input(w.Rank(), 5000, 1), recv, comm.Complex128, affine)
		if err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		if !bytes.Equal(recv, fold(0, w.Size(), 5000, 1)) {
			return errors.New("wrong result")
		}
		return nil
	}
	run(t, 4, func(w *comm.Comm) error {
		if err := w.SetAlgorithm(comm.CollAllreduce, comm.AlgRabenseifner); err != nil {
			return err
		}
		return reduce(w)
	})
	for i, err := range runProcs(t, 2, 2, reduce) {
		if err != nil {
			t.Errorf("rank %d of 2 processes × 2: %v", i, err)
		}
	}
}

// Long persistent collectives on goroutine ranks read the members'
// buffers in place, exchanged at the first start: every start sees the
// data its members wrote since their last Wait (a rank that is slow to
// refill its buffers is waited for), on 1–9 and 17 ranks, an in-place
// Alltoall included (whose copy changes at each start).
func TestPersistentShared(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 9, 17} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			run(t, n, func(w *comm.Comm) error {
				me := w.Rank()
				const cnt = 5000 // Complex128: 80,000 bytes
				send, recv := garbage(cnt*esz), garbage(cnt*esz)
				ra, err := w.AllreduceInit(send, recv, comm.Complex128, affine)
				if err != nil {
					return err
				}
				bc := garbage(cnt * esz)
				rb, err := w.BcastInit(bc, comm.Complex128, n-1)
				if err != nil {
					return err
				}
				k := max(4096, 70000/n)
				a2a := make([]byte, n*k)
				rt, err := w.AlltoallInit(a2a, a2a, comm.Byte)
				if err != nil {
					return err
				}
				gs, gr := make([]byte, k), garbage(n*k)
				rg, err := w.AllgatherInit(gs, gr, comm.Byte)
				if err != nil {
					return err
				}
				blk := func(from, to, it int) []byte {
					b := make([]byte, k)
					for j := range b {
						b[j] = byte(from*7 + to*13 + j + it*29)
					}
					return b
				}
				for it := range 4 {
					if me == it%n {
						time.Sleep(2 * time.Millisecond) // the others start first, and must wait for this rank's data
					}
					copy(send, input(me, cnt, it))
					if me == n-1 {
						copy(bc, ref(me, cnt, it))
					}
					for j := range n {
						copy(a2a[j*k:], blk(me, j, it))
					}
					copy(gs, blk(me, 0, it))
					if err := comm.StartAll(ra, rb, rt, rg); err != nil {
						return err
					}
					if err := comm.WaitAll(rg, rt, rb, ra); err != nil {
						return fmt.Errorf("start %d: %w", it, err)
					}
					if !bytes.Equal(recv, fold(0, n, cnt, it)) {
						return fmt.Errorf("rank %d, start %d: Allreduce wrong", me, it)
					}
					if !bytes.Equal(bc, ref(n-1, cnt, it)) {
						return fmt.Errorf("rank %d, start %d: Bcast wrong", me, it)
					}
					for i := range n {
						if !bytes.Equal(a2a[i*k:(i+1)*k], blk(i, me, it)) {
							return fmt.Errorf("rank %d, start %d: Alltoall in place: block %d wrong", me, it, i)
						}
						if !bytes.Equal(gr[i*k:(i+1)*k], blk(i, 0, it)) {
							return fmt.Errorf("rank %d, start %d: Allgather: block %d wrong", me, it, i)
						}
					}
				}
				for _, r := range []*comm.Request{ra, rb, rt, rg} {
					if err := r.Free(); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}

// After its first start, a start of a long persistent Allreduce through
// shared memory allocates nothing: the buffers exchanged then are kept.
func TestPersistentSharedAllocatesNothing(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("reads the allocation counter of a whole run")
	}
	const iters = 500
	n := mallocsOver(t, 20, iters, func(w *comm.Comm) (func(int) error, error) {
		send, recv := input(w.Rank(), 5000, 1), garbage(5000*esz)
		r, err := w.AllreduceInit(send, recv, comm.Complex128, affine)
		return func(int) error {
			if err := r.Start(); err != nil {
				return err
			}
			_, err := r.Wait()
			return err
		}, err
	})
	if n > 20 {
		t.Errorf("%d allocations in %d starts of a persistent Allreduce of 80,000 bytes", n, iters)
	}
}
