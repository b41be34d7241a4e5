//go:build rdma

package rdma_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/mpgo/mpgo/backend/rdma"
	"github.com/mpgo/mpgo/backend/rdma/internal/fabric"
	"github.com/mpgo/mpgo/comm"
)

// worldContext is the context of the world's point-to-point messages
// (package comm's worldContext), which a forged frame names to be matched
// by a receive on the world.
const worldContext = 2

// stranger is an endpoint outside the job that sends to one of its
// processes, as anyone who can reach the process's endpoint can: over
// net and tcp it is an ordinary listening socket.
type stranger struct {
	ep  *fabric.Endpoint
	to  fabric.Addr
	buf []byte // off the Go heap, registered when the provider wants it
	mr  *fabric.MR
	id  uint64
}

func newStranger(provider string, name []byte, size int) (*stranger, error) {
	ep, err := fabric.Open(fabric.Config{Provider: provider})
	if err != nil {
		return nil, err
	}
	s := &stranger{ep: ep}
	if s.buf, err = syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE); err != nil {
		ep.Close()
		return nil, err
	}
	if ep.Info().MRMode&fabric.MRLocal != 0 {
		if s.mr, err = ep.Register(s.buf, fabric.AccessSend); err != nil {
			s.close()
			return nil, err
		}
	}
	to, err := ep.Insert([][]byte{name})
	if err != nil {
		s.close()
		return nil, err
	}
	s.to = to[0]
	return s, nil
}

func (s *stranger) close() {
	s.mr.Close()
	s.ep.Close()
	syscall.Munmap(s.buf)
}

// send sends frame and drives the endpoint until the send completes (or
// fails: the receiver may refuse what a stranger sends).
func (s *stranger) send(frame []byte) error {
	copy(s.buf, frame)
	b := s.buf[:len(frame)]
	return s.post(10*time.Second, func(id uint64) error { return s.ep.Send(s.to, b, s.mr, id) })
}

// write RMA-writes data to the process's registered memory at raddr
// with key, and drives the endpoint until the write completes or fails.
func (s *stranger) write(data []byte, raddr, key uint64, limit time.Duration) error {
	copy(s.buf, data)
	b := s.buf[:len(data)]
	return s.post(limit, func(id uint64) error { return s.ep.Write(s.to, b, s.mr, raddr, key, true, id) })
}

// post posts an operation with call, retrying while the provider says
// to try again, and drives the endpoint until the operation completes:
// its error, or one saying it did not complete within limit.
func (s *stranger) post(limit time.Duration, call func(id uint64) error) error {
	s.id++
	deadline := time.Now().Add(limit)
	cs := make([]fabric.Completion, 8)
	for {
		err := call(s.id)
		if err == nil {
			break
		}
		if !errors.Is(err, fabric.ErrAgain) || time.Now().After(deadline) {
			return err
		}
		s.ep.Poll(cs, 0)
		runtime.Gosched()
	}
	for time.Now().Before(deadline) {
		n, err := s.ep.Poll(cs, 0)
		if err != nil {
			return err
		}
		for _, c := range cs[:n] {
			if c.ID == s.id {
				return c.Err
			}
		}
		runtime.Gosched()
	}
	return fmt.Errorf("the stranger's operation %d did not complete in %v", s.id, limit)
}

// Strangers at a process's endpoint, as the TCP backend's tests have them
// at its listening port: garbage, a forged header claiming to come from
// process 2 (rank 2, tag 77), a frame longer than any receive slot, and
// process 2's frame with its genuine token replayed from another address
// (as by someone who read it off the wire). None aborts the job, none
// is delivered, each is counted (Stats.Rejected), and rank 0's receive
// from rank 2 with tag 77 gets rank 2's real message, sent after the
// stranger's.
func TestFabricStrangers(t *testing.T) {
	provs := fabricProviders()
	if !slices.Contains(provs, "net") && fabricOffers(t, "net") {
		provs = append(provs, "net")
	}
	strangers := []struct {
		name  string
		frame func(d *rdma.Device) []byte
	}{
		{"7 bytes", func(*rdma.Device) []byte { return []byte("garbage") }},
		{"a forged header from process 2", func(*rdma.Device) []byte {
			return rdma.ForgedEager(2, 2, 0, 77, worldContext, []byte("forged"))
		}},
		{"longer than a slot", func(*rdma.Device) []byte {
			return rdma.ForgedEager(2, 2, 0, 77, worldContext, bytes.Repeat([]byte("x"), 1<<20))
		}},
		{"a token replayed from another address", func(d *rdma.Device) []byte {
			return rdma.ReplayedEager(d, 2, 2, 0, 77, worldContext, []byte("replayed"))
		}},
	}
	for _, prov := range provs {
		for _, st := range strangers {
			t.Run(prov+"/"+st.name, func(t *testing.T) {
				// Over shm only this user's processes reach an endpoint (its
				// region is a file only they can open), and libfabric 1.17's
				// shm cannot tell one from another: it reports a stale
				// source for a sender it does not know (which may be process
				// 2's), and it spins for ever copying a message longer than
				// the receive through CMA (smr_cma_loop). The token still
				// keeps such a process's frames out of the job.
				replay := st.name == "a token replayed from another address"
				switch {
				case replay && prov == "shm":
					t.Skip("shm (libfabric 1.17) does not name the senders it does not know")
				case st.name == "longer than a slot" && prov == "shm":
					t.Skip("shm (libfabric 1.17) hangs copying a message longer than the receive")
				}
				jobs := joinFabric(t, 3, fabricConfig{Provider: prov})
				d := fabricDevice(jobs[0])
				if replay && !rdma.Source(d) {
					runJobs(t, jobs, func(*comm.Comm) error { return nil })
					t.Skipf("%s does not name senders", prov)
				}
				name, err := rdma.EndpointName(d)
				if err != nil {
					t.Fatal(err)
				}
				frame := st.frame(d)
				errs := runJobs(t, jobs, func(w *comm.Comm) error {
					switch w.Rank() {
					case 0:
						got := make([]byte, 16)
						r, err := w.Irecv(got, comm.Byte, 2, 77)
						if err != nil {
							return err
						}
						s, err := newStranger(prov, name, len(frame)+4096)
						if err != nil {
							return err
						}
						defer s.close()
						if err := s.send(frame); err != nil {
							t.Logf("the stranger's send: %v", err) // the receiver may refuse it
						}
						for start := time.Now(); d.Stats().Rejected == 0; time.Sleep(time.Millisecond) {
							if time.Since(start) > 10*time.Second {
								return errors.New("the stranger's frame was not counted as rejected")
							}
						}
						if st, done, err := r.Test(); done {
							return fmt.Errorf("Recv(2, 77) completed with the stranger's frame: %q, %v", got[:st.Count], err)
						}
						if err := w.Send(nil, comm.Byte, 2, 1); err != nil { // rank 2: go
							return err
						}
						st, err := r.Wait()
						if err != nil {
							return err
						}
						if string(got[:st.Count]) != "real" {
							return fmt.Errorf("Recv(2, 77) got %q, want rank 2's %q", got[:st.Count], "real")
						}
						return nil
					case 2:
						if _, err := w.Recv(nil, comm.Byte, 0, 1); err != nil {
							return err
						}
						return w.Send([]byte("real"), comm.Byte, 0, 77)
					}
					return nil
				})
				for r, err := range errs {
					if err != nil {
						t.Errorf("rank %d: %v", r, err)
					}
				}
				if s, _ := fabricStats(jobs[0]); s.Rejected == 0 {
					t.Errorf("process 0 rejected nothing: %+v", s)
				}
			})
		}
	}
}

// A stranger that posts RMA writes to a process cannot guess the key of
// a region a peer may write: a receive buffer that a rendezvous
// registered (and the registration cache keeps registered) stays as the
// rendezvous left it after writes at its start (offset 0, as the
// providers without FI_MR_VIRT_ADDR address it) with keys 0 to 63.
// With keys counted up from 1, net let one with key 3 through.
func TestFabricStrangerWrites(t *testing.T) {
	provs := fabricProviders()
	if !slices.Contains(provs, "net") && fabricOffers(t, "net") {
		provs = append(provs, "net")
	}
	for _, prov := range provs {
		t.Run(prov, func(t *testing.T) {
			jobs := joinFabric(t, 2, fabricConfig{Provider: prov})
			d := fabricDevice(jobs[0])
			name, err := rdma.EndpointName(d)
			if err != nil {
				t.Fatal(err)
			}
			const size = 1 << 20 // a rendezvous
			buf := make([]byte, size)
			errs := runJobs(t, jobs, func(w *comm.Comm) error {
				if w.Rank() == 1 {
					if err := w.Send(bytes.Repeat([]byte{1}, size), comm.Byte, 0, 1); err != nil {
						return err
					}
					_, err := w.Recv(nil, comm.Byte, 0, 2) // until the stranger is done
					return err
				}
				if _, err := w.Recv(buf, comm.Byte, 1, 1); err != nil {
					return err
				}
				s, err := newStranger(prov, name, 4096)
				if err != nil {
					return err
				}
				defer s.close()
				evil := bytes.Repeat([]byte{0xEE}, 64)
				for key := range uint64(64) {
					err := s.write(evil, 0, key, time.Second)
					if errors.Is(err, fabric.ErrAgain) {
						t.Logf("%s: the stranger cannot post a write: %v", prov, err)
						break
					}
				}
				return w.Send(nil, comm.Byte, 1, 2)
			})
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
			if !bytes.Equal(buf, bytes.Repeat([]byte{1}, size)) {
				t.Errorf("a stranger wrote into a receive buffer: it starts %x", buf[:8])
			}
		})
	}
}
