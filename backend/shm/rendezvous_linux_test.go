//go:build linux && (amd64 || arm64)

package shm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mpgo/mpgo/backend/shm"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
	"github.com/mpgo/mpgo/internal/pmi"
)

// Rendezvous both ways at once through rings far too small for a window
// of them: two processes each start 256 sends of 4 KiB to 1.1 MiB to
// the other (rendezvous at the 4 KiB eager limit; the largest beyond
// what is read on arrival), with half of the receives posted before and
// half after, in three rounds, over rings of 4 KiB. Once a process has
// read its peer's memory, the RTS that find their receive posted are
// read on arrival by the poller, whose FIN must not wait for room in a
// ring, nor for a producer that waits for room (the other poller, as
// busy, may be what they wait for): every payload arrives intact,
// nothing hangs (either wait hangs it), and reads on arrival happened.
func TestRendezvousBothWays(t *testing.T) {
	var (
		mu   sync.Mutex
		devs []device.Device
	)
	open := func(kv device.KV, l device.Layout) (device.Device, error) {
		d, err := shm.Open(kv, shm.Config{Layout: l, EagerLimit: 4 << 10, RingSize: 4 << 10, Getenv: func(string) string { return "" }})
		if err == nil {
			mu.Lock()
			devs = append(devs, d)
			mu.Unlock()
		}
		return d, err
	}
	jobs := jobtest.Join(t, 2, job.Config{}, open)
	const msgs = 256
	size := func(i int) int { return 4<<10 + i*i*18 } // 4 KiB .. 1.1 MiB
	errs := jobtest.Run(t, jobs, func(w *comm.Comm) error {
		peer := 1 - w.Rank()
		for round := range 3 {
			out := make([][]byte, msgs)
			in := make([][]byte, msgs)
			reqs := make([]*comm.Request, 0, 2*msgs)
			recv := func(i int) error {
				in[i] = make([]byte, size(i))
				r, err := w.Irecv(in[i], comm.Byte, peer, i)
				reqs = append(reqs, r)
				return err
			}
			for i := range msgs / 2 {
				if err := recv(i); err != nil {
					return err
				}
			}
			for i := range msgs {
				out[i] = pattern(size(i), w.Rank(), round, i)
				r, err := w.Isend(out[i], comm.Byte, peer, i)
				if err != nil {
					return err
				}
				reqs = append(reqs, r)
			}
			for i := msgs / 2; i < msgs; i++ {
				if err := recv(i); err != nil {
					return err
				}
			}
			if err := comm.WaitAll(reqs...); err != nil {
				return err
			}
			for i := range msgs {
				if !bytes.Equal(in[i], pattern(size(i), peer, round, i)) {
					return fmt.Errorf("round %d, message %d of %d bytes: other bytes arrived", round, i, size(i))
				}
			}
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	var read uint64
	for _, d := range devs {
		read += shm.ReadOnArrival(d)
	}
	t.Logf("%d of %d rendezvous read on arrival", read, 2*3*msgs)
	if read == 0 {
		t.Error("no rendezvous was read on arrival")
	}
}

// A rendezvous of more than PipeLimit bytes comes through the ring in
// chunks, although the receiver could read the sender's memory; a
// shorter one is read: two processes send each other messages on both
// sides of the limit (64 KiB here), and every payload arrives intact,
// the ones at or above the limit piped (unless the host is
// oversubscribed, where none is, or the kernel refuses to let a process
// read another's, where all are); the engine starts each (no goroutine
// waits for it).
func TestPipedAboveLimit(t *testing.T) {
	var (
		mu   sync.Mutex
		devs []device.Device
	)
	open := func(kv device.KV, l device.Layout) (device.Device, error) {
		d, err := shm.Open(kv, shm.Config{Layout: l, EagerLimit: 4 << 10, RingSize: 16 << 10, PipeLimit: 64 << 10, Getenv: func(string) string { return "" }})
		if err == nil {
			mu.Lock()
			devs = append(devs, d)
			mu.Unlock()
		}
		return d, err
	}
	jobs := jobtest.Join(t, 2, job.Config{}, open)
	sizes := []int{8 << 10, 64 << 10, 64<<10 + 1, 300 << 10, 1<<20 + 5}
	errs := jobtest.Run(t, jobs, func(w *comm.Comm) error {
		peer := 1 - w.Rank()
		var reqs []*comm.Request
		for i, n := range sizes {
			r, err := w.Isend(pattern(n, w.Rank(), 0, i), comm.Byte, peer, i)
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
		// Every RTS is here before the barrier's messages (one ring, in
		// order): the receives below find them waiting, none is read on
		// arrival.
		if err := w.Barrier(); err != nil {
			return err
		}
		in := make([][]byte, len(sizes))
		for i, n := range sizes {
			in[i] = make([]byte, n)
			r, err := w.Irecv(in[i], comm.Byte, peer, i)
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
		if err := comm.WaitAll(reqs...); err != nil {
			return err
		}
		for i, n := range sizes {
			if !bytes.Equal(in[i], pattern(n, peer, 0, i)) {
				return fmt.Errorf("message %d of %d bytes: other bytes arrived", i, n)
			}
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for i, d := range devs {
		n, limit, noCMA := shm.PipedIn(d)
		want := uint64(3) // 64 KiB+1, 300 KiB, 1 MiB+5
		switch {
		case noCMA:
			want = uint64(len(sizes))
		case limit == 0:
			t.Logf("device %d: oversubscribed host, nothing piped", i)
			want = 0
		}
		if n != want {
			t.Errorf("device %d: %d rendezvous piped, want %d (limit %d, noCMA %v)", i, n, want, limit, noCMA)
		}
		if s := shm.Started(d); s != n {
			t.Errorf("device %d: %d of %d piped rendezvous started, want all (plain receives)", i, s, n)
		}
	}
}

// pattern is the payload of message i of round from rank.
func pattern(n, rank, round, i int) []byte {
	b := make([]byte, n)
	binary.LittleEndian.PutUint64(b, uint64(rank<<48|round<<32|i)) // n ≥ 4 KiB
	for j := 8; j < n; j *= 2 {
		copy(b[j:], b[:j]) // the header repeated, and the tail different from a stale buffer
	}
	return b
}

// A rendezvous read with process_vm_readv is split with its sender, which
// writes the second part into the receive buffer while the receiver
// reads the first: one process sends the other messages of 48 KiB to
// 256 KiB (blocking sends: the sender polls, waiting for each FIN), and
// every payload arrives intact, the reads split (the sender's part
// written by it where it answered in time, which the log says, else read
// by the receiver); with MPGO_SHM_SPLIT=0, none is split.
func TestSplitRendezvous(t *testing.T) {
	for _, split := range []string{"", "0"} {
		t.Run("MPGO_SHM_SPLIT="+split, func(t *testing.T) {
			var (
				mu   sync.Mutex
				devs = map[int]device.Device{}
			)
			open := func(kv device.KV, l device.Layout) (device.Device, error) {
				d, err := shm.Open(kv, shm.Config{Layout: l, Getenv: func(k string) string {
					if k == "MPGO_SHM_SPLIT" {
						return split
					}
					return ""
				}})
				if err == nil {
					mu.Lock()
					devs[len(devs)] = d
					mu.Unlock()
				}
				return d, err
			}
			jobs := jobtest.Join(t, 2, job.Config{}, open)
			const msgs = 60
			size := func(i int) int { return 48<<10 + i*3517 } // 48 KiB .. 250 KiB
			errs := jobtest.Run(t, jobs, func(w *comm.Comm) error {
				for i := range msgs {
					if w.Rank() == 0 {
						if err := w.Send(pattern(size(i), 0, 0, i), comm.Byte, 1, i); err != nil {
							return err
						}
						continue
					}
					in := make([]byte, size(i))
					if _, err := w.Recv(in, comm.Byte, 0, i); err != nil {
						return err
					}
					if !bytes.Equal(in, pattern(size(i), 0, 0, i)) {
						return fmt.Errorf("message %d of %d bytes: other bytes arrived", i, size(i))
					}
				}
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			var written, taken uint64
			on := true
			for _, d := range devs {
				w, k, o := shm.SplitReads(d)
				written, taken, on = written+w, taken+k, on && o
			}
			t.Logf("%d parts written by the sender, %d read by the receiver", written, taken)
			for i, d := range devs {
				if n := shm.RendezvousOut(d); n != 0 {
					t.Errorf("process %d: %d rendezvous sends counted unfinished after the job", i, n)
				}
			}
			_, _, noCMA := shm.PipedIn(devs[0])
			switch {
			case split == "0" && (on || written+taken != 0):
				t.Errorf("%d reads split with MPGO_SHM_SPLIT=0", written+taken)
			case split == "" && on && !noCMA && written+taken < msgs/2:
				// A read is whole where its request found the ring's
				// producer busy (putNow): rare, not half of them.
				t.Errorf("%d of %d reads split", written+taken, msgs)
			}
		})
	}
}

// MPGO_SHM_EAGER sets the protocol switch; a value that is not a
// positive number of bytes fails Open with an error wrapping ErrArg.
func TestEagerFromEnvironment(t *testing.T) {
	refused(t, "MPGO_SHM_EAGER", "abc", "0", "-4096")
}

// MPGO_SHM_PIPE sets the size above which rendezvous are piped (0:
// never); a value that is not a number of bytes fails Open with an error
// naming it, wrapping ErrArg.
func TestPipeFromEnvironment(t *testing.T) {
	refused(t, "MPGO_SHM_PIPE", "abc", "-1")
	for v, want := range map[string]int{"0": 0, "2097152": 2 << 20, "": shm.DefaultPipeLimit} {
		d, err := openWith("MPGO_SHM_PIPE", v)
		if err != nil {
			t.Fatalf("MPGO_SHM_PIPE=%q: %v", v, err)
		}
		if _, limit, _ := shm.PipedIn(d); limit != want {
			t.Errorf("MPGO_SHM_PIPE=%q: limit %d, want %d", v, limit, want)
		}
		d.Close()
	}
}

// openWith opens the device of a job of one process with the
// environment variable key set to v (and no other).
func openWith(key, v string) (*shm.Device, error) {
	getenv := func(k string) string {
		if k == key {
			return v
		}
		return ""
	}
	return shm.Open(pmi.NewMemory(1)[0], shm.Config{Layout: devicetest.Blocks(1, 1), Getenv: getenv})
}

// refused checks that each of values of the environment variable key
// fails Open with an error naming key, wrapping ErrArg.
func refused(t *testing.T, key string, values ...string) {
	t.Helper()
	for _, v := range values {
		d, err := openWith(key, v)
		if err == nil {
			d.Close()
			t.Fatalf("%s=%s: opened", key, v)
		}
		if !errors.Is(err, device.ErrArg) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: %v, want an error naming it, wrapping ErrArg", key, v, err)
		}
	}
}

// A piped rendezvous whose sender's process dies while its chunks are
// on the way: the receive fails with an error wrapping ErrPeerLost (or
// has the whole payload, if the sender wrote it all first), and nothing
// hangs. Process 1 starts a send of 4 MiB (eight rings' worth) once
// rank 0 posted its receive, and dies at once.
func TestPipedSenderLost(t *testing.T) {
	var devs [2]device.Device
	open := func(kv device.KV, l device.Layout) (device.Device, error) {
		d, err := shm.Open(kv, shm.Config{Layout: l, RingSize: 512 << 10, Getenv: func(string) string { return "" }})
		if err == nil {
			devs[kv.Rank()] = d
		}
		return d, err
	}
	const size = 4 << 20
	dies := errors.New("this process dies")
	jobs := jobtest.Join(t, 2, job.Config{}, open)
	errs := jobtest.Run(t, jobs, func(w *comm.Comm) error {
		if w.Rank() == 1 {
			if _, err := w.Recv(nil, comm.Byte, 0, 1); err != nil {
				return err
			}
			if _, err := w.Isend(pattern(size, 1, 0, 0), comm.Byte, 0, 0); err != nil {
				return err
			}
			return dies
		}
		in := make([]byte, size)
		r, err := w.Irecv(in, comm.Byte, 1, 0)
		if err != nil {
			return err
		}
		if err := w.Send(nil, comm.Byte, 1, 1); err != nil {
			return err
		}
		switch _, err := r.Wait(); {
		case err == nil:
			if !bytes.Equal(in, pattern(size, 1, 0, 0)) {
				return errors.New("the receive completed with other bytes")
			}
			t.Log("the whole payload came before the sender died")
		case !errors.Is(err, comm.ErrPeerLost):
			return fmt.Errorf("receive from the process that died: %v, want ErrPeerLost", err)
		default:
			t.Logf("the receive failed: %v", err)
		}
		return nil
	})
	if !errors.Is(errs[1], dies) || errs[0] != nil {
		t.Fatalf("errors %v, want rank 1's %v alone", errs, dies)
	}
	if _, limit, _ := shm.PipedIn(devs[0]); limit > 0 && shm.Started(devs[0]) != 1 {
		t.Errorf("%d pulls started, want the one piped", shm.Started(devs[0]))
	}
}
