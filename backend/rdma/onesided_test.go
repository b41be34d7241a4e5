//go:build rdma

package rdma_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/internal/job/jobtest"
)

// The device's one-sided operations between two processes: rank 1
// exposes memory and then only waits at a barrier, while rank 0 writes
// it (a write larger than a staging slot, in chunks, and more writes in
// flight than there are slots), reads it back, adds to a word with a
// fetching atomic, swaps another by compare-and-swap and reaches its own
// process's memory through the provider as well. Every result is checked
// against what the operations must have made.
func TestFabricOneSided(t *testing.T) {
	for _, prov := range fabricProviders() {
		t.Run(prov, func(t *testing.T) {
			jobs := joinFabric(t, 2, fabricConfig{Provider: prov})
			errs := runJobs(t, jobs, oneSidedBody)
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			for p, j := range jobs {
				s, _ := fabricStats(j)
				if p == 0 && s.OneSided < 100 {
					t.Errorf("process 0 posted %d one-sided operations, want 100 or more", s.OneSided)
				}
			}
		})
	}
}

// oneSidedBody is a rank's part of TestFabricOneSided.
func oneSidedBody(w *comm.Comm) error {
	os := w.OneSided()
	if os == nil {
		return errors.New("the RDMA device offers no one-sided operations")
	}
	const size = 300 << 10 // several staging slots
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return err
	}
	defer syscall.Munmap(mem)
	x, err := os.Expose(mem)
	if err != nil {
		return err
	}
	defer x.Close()
	// An exposure never closed (a window never freed): the device closes
	// its region itself, before its endpoint.
	if _, err := os.Expose(mem[:64]); err != nil {
		return err
	}
	// Every rank learns every rank's Remote.
	mine := make([]byte, 16)
	binary.LittleEndian.PutUint64(mine, x.Remote().Addr)
	binary.LittleEndian.PutUint64(mine[8:], x.Remote().Key)
	all := make([]byte, 16*w.Size())
	if err := w.Allgather(mine, all, comm.Byte); err != nil {
		return err
	}
	at := func(r, off int) device.Remote {
		return device.Remote{Addr: binary.LittleEndian.Uint64(all[16*r:]), Key: binary.LittleEndian.Uint64(all[16*r+8:])}.Offset(off)
	}
	if w.Rank() == 0 {
		if err := oneSidedOrigin(os, at); err != nil {
			return err
		}
	}
	return w.Barrier()
}

// oneSidedOrigin is rank 0's side of oneSidedBody.
func oneSidedOrigin(os *comm.OneSided, at func(r, off int) device.Remote) error {
	const size = 300 << 10
	src := make([]byte, size)
	for i := range src {
		src[i] = byte(i*7 + i>>8)
	}
	wr, err := os.Write(1, src, at(1, 0))
	if err != nil {
		return err
	}
	clear(src[:16]) // copied already: the write must not see this
	if err := wr.Wait(); err != nil {
		return err
	}
	back := make([]byte, size)
	rd, err := os.Read(1, back, at(1, 0))
	if err != nil {
		return err
	}
	if err := rd.Wait(); err != nil {
		return err
	}
	for i := range 16 { // the first bytes, as they were when written
		src[i] = byte(i*7 + i>>8)
	}
	if !bytes.Equal(back, src) {
		return errors.New("read back differs from what was written")
	}
	// More small writes in flight than there are staging slots.
	var rs []*comm.RMA
	for i := range 100 {
		r, err := os.Write(1, []byte{byte(i)}, at(1, 4096+i))
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	for _, r := range rs {
		if err := r.Wait(); err != nil {
			return err
		}
	}
	if err := expectRead(os, 1, at(1, 4096), 100, func(i int) byte { return byte(i) }); err != nil {
		return err
	}
	// A fetching add on word 0 of each process (its own through the
	// provider too), then a compare-and-swap that misses and one that
	// hits. A provider without atomics (net) refuses them cleanly.
	if !os.Atomics(device.AtomicFetch, device.AtomicInt64, device.AtomicSum) {
		_, err := os.Atomic(1, device.Atomic{Kind: device.AtomicFetch, Type: device.AtomicInt64, Op: device.AtomicSum,
			Operand: make([]byte, 8), Result: make([]byte, 8)}, at(1, 0))
		if !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("an atomic the provider does not do: %v, want ErrArg", err)
		}
	}
	for r := range 2 {
		if !os.Atomics(device.AtomicFetch, device.AtomicInt64, device.AtomicSum) {
			break
		}
		word := make([]byte, 8)
		binary.LittleEndian.PutUint64(word, 5)
		old := make([]byte, 8)
		if err := wait(os.Atomic(r, device.Atomic{Kind: device.AtomicFetch, Type: device.AtomicInt64, Op: device.AtomicSum, Operand: word, Result: old}, at(r, 0))); err != nil {
			return err
		}
		before := binary.LittleEndian.Uint64(old)
		for i, cmp := range []uint64{before + 1, before + 5} {
			c, v := make([]byte, 8), make([]byte, 8)
			binary.LittleEndian.PutUint64(c, cmp)
			binary.LittleEndian.PutUint64(v, 99)
			if err := wait(os.Atomic(r, device.Atomic{Kind: device.AtomicCompare, Type: device.AtomicInt64, Op: device.AtomicCSwap, Operand: v, Compare: c, Result: old}, at(r, 0))); err != nil {
				return err
			}
			if got := binary.LittleEndian.Uint64(old); got != before+5 {
				return fmt.Errorf("rank %d: compare-and-swap %d found %d, want %d", r, i, got, before+5)
			}
		}
		if err := expectRead(os, r, at(r, 0), 8, func(i int) byte { return []byte{99, 0, 0, 0, 0, 0, 0, 0}[i] }); err != nil {
			return err
		}
	}
	if _, err := os.Write(2, nil, at(1, 0)); !errors.Is(err, comm.ErrRank) {
		return fmt.Errorf("a write to rank 2 of 2: %v, want ErrRank", err)
	}
	return nil
}

// wait waits for r, or returns err.
func wait(r *comm.RMA, err error) error {
	if err != nil {
		return err
	}
	return r.Wait()
}

// expectRead reads n bytes of rank's memory at at and checks byte i
// against want(i).
func expectRead(os *comm.OneSided, rank int, at device.Remote, n int, want func(i int) byte) error {
	b := make([]byte, n)
	if err := wait(os.Read(rank, b, at)); err != nil {
		return err
	}
	for i := range b {
		if b[i] != want(i) {
			return fmt.Errorf("rank %d: byte %d read %d, want %d", rank, i, b[i], want(i))
		}
	}
	return nil
}

// A process that exposes window memory keeps its progress loop polling
// (every rmaNap at most, over a provider without a wait object: shm),
// since other processes' writes there need it; it must not spin. Two idle
// processes with an exposure each used 0.38 of a core together, over shm
// on a 2-core machine (0.06 without one); the bound is one core.
func TestFabricExposedIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const wait = 300 * time.Millisecond
	prov := fabricProviders()[0]
	jobs := joinFabric(t, 2, fabricConfig{Provider: prov})
	var used time.Duration
	errs := runJobs(t, jobs, func(w *comm.Comm) error {
		x, err := w.OneSided().Expose(make([]byte, 64))
		if err != nil {
			return err
		}
		defer x.Close()
		if err := w.Barrier(); err != nil {
			return err
		}
		if w.Rank() == 0 {
			before := jobtest.CPUTime(t)
			time.Sleep(wait)
			used = jobtest.CPUTime(t) - before
		}
		return w.Barrier()
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Logf("%s: %v of CPU time in %v, two idle processes with an exposure each", prov, used, wait)
	if used > wait {
		t.Errorf("%v of CPU time in %v: idle processes with exposed memory spin", used, wait)
	}
}
