package comm_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mpgo/mpgo/comm"
)

// pipeDevice joins worlds of one job as if each were a process of its own:
// it delivers eager messages as copies and larger or synchronous ones as
// remotes whose payload is pulled on match, the way a network device does.
// Ranks 0..split-1 live in worlds[0], the others in worlds[1].
type pipeDevice struct {
	worlds *[2]*comm.World
	split  int
	eager  int
	self   int // which world this device serves

	mu    sync.Mutex
	sent  int // messages handed to the device
	pulls int // remotes pulled
}

func (d *pipeDevice) owner(rank int) int {
	if rank < d.split {
		return 0
	}
	return 1
}

func (d *pipeDevice) Send(src, dst int, env comm.Envelope, data []byte, done func(error)) error {
	d.mu.Lock()
	d.sent++
	d.mu.Unlock()
	to := d.worlds[d.owner(dst)]
	if !env.Sync && env.Len < d.eager {
		if err := to.Deliver(src, dst, env, append([]byte{}, data...), nil); err != nil {
			return err
		}
		done(nil)
		return nil
	}
	return to.Deliver(src, dst, env, nil, &pipeRemote{d: d, data: data, done: done})
}

func (d *pipeDevice) Close() error { return nil }

type pipeRemote struct {
	d    *pipeDevice
	data []byte
	done func(error)
}

func (r *pipeRemote) Pull(dst []byte) error {
	r.d.mu.Lock()
	r.d.pulls++
	r.d.mu.Unlock()
	copy(dst, r.data)
	r.done(nil)
	return nil
}

// runPiped runs fn on n ranks split across two worlds joined by pipe
// devices.
func runPiped(t *testing.T, n, split int, fn func(w *comm.Comm) error) [2]*pipeDevice {
	t.Helper()
	var worlds [2]*comm.World
	var devs [2]*pipeDevice
	for k := range worlds {
		devs[k] = &pipeDevice{worlds: &worlds, split: split, eager: comm.DefaultEagerLimit, self: k}
		var local []int
		for r := 0; r < n; r++ {
			if devs[k].owner(r) == k {
				local = append(local, r)
			}
		}
		w, err := comm.NewWorld(n, comm.Config{Local: local, Device: devs[k]})
		if err != nil {
			t.Fatal(err)
		}
		worlds[k] = w
	}
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		w := worlds[devs[0].owner(r)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(w.Comm(r)); err != nil {
				errs <- fmt.Errorf("rank %d: %w", r, err)
				worlds[0].Abort()
				worlds[1].Abort()
			}
		}()
	}
	wg.Wait()
	worlds[0].Close()
	worlds[1].Close()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return devs
}

// The same matching rules hold for messages that crossed a device: order
// per pair, wildcards, truncation, types, synchronous and large sends.
func TestDeviceSemantics(t *testing.T) {
	devs := runPiped(t, 4, 2, func(w *comm.Comm) error {
		me := w.Rank()
		if me == 3 { // remote sender: eager, rendezvous and sync, in order
			for i := 0; i < 20; i++ {
				size := []int{8, 100 << 10, 16}[i%3]
				var err error
				if i%3 == 2 {
					err = w.Ssend(payload(size, uint64(i)), comm.Byte, 0, i%2)
				} else {
					err = w.Send(payload(size, uint64(i)), comm.Byte, 0, i%2)
				}
				if err != nil {
					return err
				}
			}
			if err := w.Send(payload(200<<10, 99), comm.Byte, 0, 5); err != nil {
				return err
			}
			if err := w.Send(make([]byte, 16), comm.Float64, 0, 6); err != nil {
				return err
			}
			return w.Barrier()
		}
		if me == 0 {
			buf := make([]byte, 200<<10)
			for i := 0; i < 20; i++ {
				st, err := w.Recv(buf, comm.Byte, comm.AnySource, comm.AnyTag)
				if err != nil {
					return err
				}
				if st.Source != 3 || val(buf) != uint64(i) || st.Tag != i%2 {
					return fmt.Errorf("message %d: got %d from %d tag %d", i, val(buf), st.Source, st.Tag)
				}
			}
			st, err := w.Probe(3, 5)
			if err != nil || st.Count != 200<<10 {
				return fmt.Errorf("probe of a remote: %v %v", st, err)
			}
			if _, err := w.Recv(buf[:10], comm.Byte, 3, 5); !errors.Is(err, comm.ErrTruncate) {
				return fmt.Errorf("truncated remote: %v", err)
			}
			if _, err := w.Recv(make([]byte, 16), comm.Int64, 3, 6); !errors.Is(err, comm.ErrType) {
				return fmt.Errorf("mistyped remote: %v", err)
			}
			return w.Barrier()
		}
		return w.Barrier()
	})
	if devs[1].pulls == 0 || devs[1].sent == 0 {
		t.Errorf("nothing went through the device: %d sent, %d pulled", devs[1].sent, devs[1].pulls)
	}
}

// A ring across the two worlds, with a Split and owned receives.
func TestDeviceRingAndSplit(t *testing.T) {
	const n = 6
	runPiped(t, n, 3, func(w *comm.Comm) error {
		next, prev := (w.Rank()+1)%n, (w.Rank()+n-1)%n
		in := make([]byte, 8)
		if _, err := w.Sendrecv(payload(8, uint64(w.Rank())), comm.Byte, next, 1, in, comm.Byte, prev, 1); err != nil {
			return err
		}
		if val(in) != uint64(prev) {
			return fmt.Errorf("got %d from %d", val(in), prev)
		}
		s, err := w.Split(w.Rank()%2, w.Rank())
		if err != nil {
			return err
		}
		if s.Size() != 3 {
			return fmt.Errorf("split size %d", s.Size())
		}
		// Around the split's ring too: its ranks differ from world ranks.
		sn, sp := (s.Rank()+1)%3, (s.Rank()+2)%3
		st, err := s.Sendrecv(payload(8, uint64(s.Rank())), comm.Byte, sn, 3, in, comm.Byte, sp, 3)
		if err != nil || val(in) != uint64(sp) || st.Source != sp {
			return fmt.Errorf("split ring: %v %d %v", st, val(in), err)
		}
		if w.Rank() == 1 {
			return w.SendOwned(payload(300<<10, 7), comm.Byte, 4, 2)
		}
		if w.Rank() == 4 {
			got, st, err := w.RecvOwned(comm.Byte, comm.AnySource, 2)
			if err != nil || st.Count != 300<<10 || val(got) != 7 {
				return fmt.Errorf("owned across the device: %v %v", st, err)
			}
		}
		return nil
	})
}

func TestDeviceConfigErrors(t *testing.T) {
	if _, err := comm.NewWorld(4, comm.Config{Local: []int{0, 1}}); !errors.Is(err, comm.ErrArg) {
		t.Errorf("remote ranks without a device: %v", err)
	}
	if _, err := comm.NewWorld(4, comm.Config{Local: []int{0, 9}, Device: &pipeDevice{}}); !errors.Is(err, comm.ErrRank) {
		t.Errorf("local rank out of range: %v", err)
	}
	w, err := comm.NewWorld(2, comm.Config{Local: []int{0}, Device: &pipeDevice{}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Deliver(0, 1, comm.Envelope{}, nil, nil); !errors.Is(err, comm.ErrRank) {
		t.Errorf("deliver to a rank that is not local: %v", err)
	}
}
