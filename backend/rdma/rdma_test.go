//go:build rdma

package rdma_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpgo/mpgo/backend/rdma"
	"github.com/mpgo/mpgo/backend/rdma/internal/fabric"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/comm/device/devicetest"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/job/jobtest"
)

// fabricProviders are the providers the tests run on: FI_PROVIDER when
// set, else tcp and shm.
func fabricProviders() []string {
	if p := os.Getenv("FI_PROVIDER"); p != "" {
		return []string{p}
	}
	return []string{"tcp", "shm"}
}

// fabricConfig is how each process of a test joins over the fabric.
type fabricConfig struct {
	JobConfig job.Config // its EagerLimit is the device's too
	Provider  string
}

// openFabric is the RDMA backend's job.Opener over provider, with eager
// as its eager limit.
func openFabric(provider string) func(eager int) job.Opener {
	return func(eager int) job.Opener {
		return func(kv device.KV, l device.Layout) (device.Device, error) {
			return rdma.Open(kv, rdma.Config{Layout: l, EagerLimit: eager, Provider: provider})
		}
	}
}

// joinFabric plays procs processes joined over the fabric in this one; a
// provider the machine lacks skips.
func joinFabric(t testing.TB, procs int, cfg fabricConfig) []*job.Job {
	t.Helper()
	return jobtest.Join(t, procs, cfg.JobConfig, openFabric(cfg.Provider)(cfg.JobConfig.EagerLimit))
}

// runJobs runs fn on every rank of jobs and closes them (jobtest.Run).
func runJobs(t testing.TB, jobs []*job.Job, fn func(w *comm.Comm) error) []error {
	t.Helper()
	return jobtest.Run(t, jobs, fn)
}

// fabricDevice returns the job's RDMA device, nil when it has another.
func fabricDevice(j *job.Job) *rdma.Device {
	d, _ := j.Device().(*rdma.Device)
	return d
}

// fabricStats returns the counters of the job's RDMA device.
func fabricStats(j *job.Job) (rdma.Stats, bool) {
	if d := fabricDevice(j); d != nil {
		return d.Stats(), true
	}
	return rdma.Stats{}, false
}

// The conformance suite over the fabric, on each provider: the semantics
// suite on jobs of several shapes (a small eager limit sends most
// messages by rendezvous, an RMA write), a process that finishes early
// (it says goodbye) and one that dies (it says ABORT as it closes).
func TestFabricBackend(t *testing.T) {
	for _, prov := range fabricProviders() {
		t.Run(prov, func(t *testing.T) {
			devicetest.TestBackend(t, fabricHarness(prov))
		})
	}
}

// fabricHarness plays the jobs of devicetest.TestBackend over provider.
//
// Over shm it skips the jobs in which a process dies (PeerLost): the
// processes share this one's address space, and libfabric's shm hands an
// endpoint of the same process the very region of its peer rather than a
// mapping of its own, so a region is freed under the others when its
// endpoint closes. A graceful close waits for every process's BYE, but an
// aborting one does not, and it sends ABORT to every process that did not
// say BYE, the one that aborted first included: that fi_send writes into
// a freed region and faults (SIGSEGV in the provider's spin lock, from
// Device.close through sendControl). Separate processes keep their own
// mappings of a dead peer's region.
func fabricHarness(provider string) devicetest.Harness {
	h := jobtest.Harness(openFabric(provider))
	if provider != "shm" {
		return h
	}
	return func(t testing.TB, s devicetest.Shape, fn func(w *comm.Comm) error) []error {
		if strings.Contains(t.Name(), "/PeerLost/") {
			t.Skip("shm, processes in one address space: an aborting device's ABORT to the process that aborted first writes into its freed region (SIGSEGV); see fabricHarness")
		}
		return h(t, s, fn)
	}
}

// A rendezvous of 1 MiB and more moves with no intermediate copy: the
// device's counter of bytes copied on the rendezvous path stays at zero
// while the RMA-written bytes grow by the payload, and a buffer used
// again is registered once.
func TestFabricRendezvousZeroCopy(t *testing.T) {
	for _, prov := range fabricProviders() {
		t.Run(prov, func(t *testing.T) {
			jobs := joinFabric(t, 2, fabricConfig{Provider: prov})
			const reps = 5
			sizes := []int{1 << 20, 4 << 20}
			errs := runJobs(t, jobs, func(w *comm.Comm) error {
				for _, n := range sizes {
					buf := make([]byte, n)
					for i := range reps {
						if w.Rank() == 0 {
							for j := range buf {
								buf[j] = byte(i + j)
							}
							if err := w.Send(buf, comm.Byte, 1, i); err != nil {
								return err
							}
						} else {
							if _, err := w.Recv(buf, comm.Byte, 0, i); err != nil {
								return err
							}
							for j := range buf {
								if buf[j] != byte(i+j) {
									return fmt.Errorf("byte %d of message %d differs", j, i)
								}
							}
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
			var total int64
			for _, n := range sizes {
				total += int64(n * reps)
			}
			s0, _ := fabricStats(jobs[0])
			s1, _ := fabricStats(jobs[1])
			t.Logf("sender %+v", s0)
			t.Logf("receiver %+v", s1)
			if s0.RndzMessages != int64(len(sizes)*reps) || s0.RndzWritten != total || s1.RndzWritten != total {
				t.Errorf("rendezvous: %d messages, %d bytes written, %d received; want %d, %d", s0.RndzMessages, s0.RndzWritten, s1.RndzWritten, len(sizes)*reps, total)
			}
			if s0.RndzCopied != 0 || s1.RndzCopied != 0 {
				t.Errorf("rendezvous copied %d + %d bytes, want 0", s0.RndzCopied, s1.RndzCopied)
			}
			// One registration per buffer at the receiver (and at the sender
			// under FI_MR_LOCAL); every other message hits the cache.
			if s1.Registrations != int64(len(sizes)) || s1.RegCacheHits != int64(len(sizes)*(reps-1)) {
				t.Errorf("receiver: %d registrations, %d cache hits; want %d, %d", s1.Registrations, s1.RegCacheHits, len(sizes), len(sizes)*(reps-1))
			}
		})
	}
}

// Eager messages below the limit: one copy into the send slot, one out
// of the receive slot (straight into a posted receive, or out of the
// slot and then into the receive buffer when it came first).
func TestFabricEager(t *testing.T) {
	jobs := joinFabric(t, 2, fabricConfig{Provider: fabricProviders()[0]})
	errs := runJobs(t, jobs, sendOne(bytes.Repeat([]byte("mpgo"), 1000)))
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	s0, _ := fabricStats(jobs[0])
	if s0.EagerMessages < 1 || s0.RndzMessages != 0 {
		t.Errorf("sender stats %+v: want eager only", s0)
	}
}

// A burst of sends to one process shares batches (one provider send
// for many eager messages), and the receiver still sees every message
// whole and in order: eager ones of every size, some batched and some
// not, rendezvous between them, receives posted before and after the
// arrival, matched by a wildcard tag (non-overtaking).
// An eager message too large for a batch goes from the sender's buffer
// with no copy (EagerLent): a blocking Send returns once the provider is
// done with the buffer, without waiting for the receive (posted late
// here, so the messages arrive unexpected), and the buffer, overwritten
// right after, arrives as it was at the Send.
func TestFabricEagerLent(t *testing.T) {
	provs := fabricProviders()
	if !slices.Contains(provs, "net") && fabricOffers(t, "net") {
		provs = append(provs, "net") // the one that lends
	}
	for _, prov := range provs {
		t.Run(prov, func(t *testing.T) {
			jobs := joinFabric(t, 2, fabricConfig{Provider: prov, JobConfig: job.Config{EagerLimit: 64 << 10}})
			const n, size = 8, 40000
			fill := func(buf []byte, i int) {
				for j := range buf {
					buf[j] = byte(i*11 + j)
				}
			}
			sent := make(chan struct{})
			errs := runJobs(t, jobs, func(w *comm.Comm) error {
				if w.Rank() == 0 {
					defer close(sent)
					buf := make([]byte, size)
					for i := range n {
						fill(buf, i)
						if err := w.Send(buf, comm.Byte, 1, i); err != nil {
							return err
						}
					}
					reqs := make([]*comm.Request, n)
					for i := range n {
						b := make([]byte, size)
						fill(b, n+i)
						var err error
						if reqs[i], err = w.Isend(b, comm.Byte, 1, n+i); err != nil {
							return err
						}
					}
					return comm.WaitAll(reqs...)
				}
				<-sent
				got, want := make([]byte, size), make([]byte, size)
				for i := range 2 * n {
					if _, err := w.Recv(got, comm.Byte, 0, i); err != nil {
						return err
					}
					if fill(want, i); !bytes.Equal(got, want) {
						return fmt.Errorf("message %d differs", i)
					}
				}
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			s0, _ := fabricStats(jobs[0])
			lent, copied := int64(2*n), int64(0)
			if !fabricDevice(jobs[0]).LendsEager() {
				lent, copied = 0, 2*n*size
			}
			if s0.EagerLent != lent || s0.EagerCopied != copied || s0.RndzMessages != 0 {
				t.Errorf("sender stats %+v: want %d eager messages lent, %d bytes copied", s0, lent, copied)
			}
			if prov == "net" && !fabricDevice(jobs[0]).LendsEager() {
				t.Error("net's endpoint does not lend")
			}
		})
	}
}

func TestFabricBatch(t *testing.T) {
	for _, prov := range fabricProviders() {
		t.Run(prov, func(t *testing.T) {
			defer rdma.SetBatchGap(rdma.SetBatchGap(time.Second))
			jobs := joinFabric(t, 2, fabricConfig{Provider: prov})
			sizes := []int{0, 8, 1000, 5000, 8, 20000, 8, 70000, 300, 1}
			const n = 200
			fill := func(buf []byte, i int) {
				for j := range buf {
					buf[j] = byte(i*7 + j)
				}
			}
			errs := runJobs(t, jobs, func(w *comm.Comm) error {
				if w.Rank() == 0 {
					reqs := make([]*comm.Request, n)
					for i := range n {
						buf := make([]byte, sizes[i%len(sizes)])
						fill(buf, i)
						var err error
						if reqs[i], err = w.Isend(buf, comm.Byte, 1, i%3); err != nil {
							return err
						}
					}
					return comm.WaitAll(reqs...)
				}
				// The first half is received as it comes (after it
				// arrived, mostly), the second half is posted first.
				check := func(i int, buf []byte, st comm.Status) error {
					want := make([]byte, sizes[i%len(sizes)])
					fill(want, i)
					if st.Tag != i%3 || st.Count != len(want) || !bytes.Equal(buf[:len(want)], want) {
						return fmt.Errorf("message %d: tag %d, %d bytes, want tag %d, %d bytes", i, st.Tag, st.Count, i%3, len(want))
					}
					return nil
				}
				for i := range n / 2 {
					buf := make([]byte, 70000)
					st, err := w.Recv(buf, comm.Byte, 0, comm.AnyTag)
					if err != nil {
						return err
					}
					if err := check(i, buf, st); err != nil {
						return err
					}
				}
				bufs := make([][]byte, n/2)
				reqs := make([]*comm.Request, n/2)
				for i := range bufs {
					bufs[i] = make([]byte, 70000)
					var err error
					if reqs[i], err = w.Irecv(bufs[i], comm.Byte, 0, comm.AnyTag); err != nil {
						return err
					}
				}
				for i, r := range reqs {
					st, err := r.Wait()
					if err != nil {
						return err
					}
					if err := check(n/2+i, bufs[i], st); err != nil {
						return err
					}
				}
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			s0, _ := fabricStats(jobs[0])
			t.Logf("sender %+v", s0)
			if s0.Batched == 0 {
				t.Errorf("a burst of %d Isends: no message was batched", n)
			}
		})
	}
}

// A batch is sent even when its sender does not wait for anything
// afterwards: the progress loop sends it once it is batchAge old.
func TestFabricBatchSentWithoutWait(t *testing.T) {
	defer rdma.SetBatchGap(rdma.SetBatchGap(time.Second))
	jobs := joinFabric(t, 2, fabricConfig{Provider: fabricProviders()[0]})
	got := make(chan time.Duration, 1)
	errs := runJobs(t, jobs, func(w *comm.Comm) error {
		if err := w.Barrier(); err != nil { // connected
			return err
		}
		if w.Rank() == 0 {
			for i := range 4 {
				if err := w.Send([]byte{byte(i)}, comm.Byte, 1, 1); err != nil {
					return err
				}
			}
			time.Sleep(300 * time.Millisecond) // no call into mpgo meanwhile
			return nil
		}
		start := time.Now()
		buf := make([]byte, 1)
		for i := range 4 {
			if _, err := w.Recv(buf, comm.Byte, 0, 1); err != nil {
				return err
			}
			if buf[0] != byte(i) {
				return fmt.Errorf("message %d carries %d", i, buf[0])
			}
		}
		got <- time.Since(start)
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	s0, _ := fabricStats(jobs[0])
	if s0.Batched == 0 {
		t.Fatalf("no message was batched: %+v", s0)
	}
	if d := <-got; d > 200*time.Millisecond {
		t.Errorf("the burst arrived after %v, while its sender slept 300ms (batched: %d)", d, s0.Batched)
	}
}

// A ping-pong of small messages is driven by the ranks that wait: they
// reap the completion queue themselves (no handoff from the progress
// goroutine), and the small frames go by fi_inject (no send completion).
func TestFabricRankProgress(t *testing.T) {
	for _, prov := range fabricProviders() {
		t.Run(prov, func(t *testing.T) {
			jobs := joinFabric(t, 2, fabricConfig{Provider: prov})
			errs := runJobs(t, jobs, func(w *comm.Comm) error {
				_, err := pingPong(w, 8, 200)
				return err
			})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			for p, j := range jobs {
				s, _ := fabricStats(j)
				t.Logf("process %d: %+v", p, s)
				if s.RankReaped == 0 {
					t.Errorf("process %d: no completion reaped by a waiting rank", p)
				}
				if s.Injected < 300 {
					t.Errorf("process %d: %d of 300 small messages injected", p, s.Injected)
				}
			}
		})
	}
}

// Ranks that wait long do not burn a core: each polls for a short window
// at most (one per process at a time), then parks, and the progress
// goroutine blocks. Six ranks of one process wait 300 ms for a message;
// the whole process may use a fraction of one core meanwhile.
func TestFabricWaitersPark(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const wait = 300 * time.Millisecond
	jobs := joinFabric(t, 2, fabricConfig{JobConfig: job.Config{RanksPerProcess: 6}, Provider: fabricProviders()[0]})
	var used time.Duration
	errs := runJobs(t, jobs, func(w *comm.Comm) error {
		if w.Rank() != 0 {
			if w.Rank() < 6 {
				return nil // process 0's other ranks
			}
			_, err := w.Recv(nil, comm.Byte, 0, 1)
			return err
		}
		time.Sleep(10 * time.Millisecond) // let the receivers block
		before := jobtest.CPUTime(t)
		time.Sleep(wait)
		used = jobtest.CPUTime(t) - before
		for r := 6; r < w.Size(); r++ {
			if err := w.Send(nil, comm.Byte, r, 1); err != nil {
				return err
			}
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Logf("%v of CPU time in %v while 6 ranks waited", used, wait)
	if used > wait/2 {
		t.Errorf("%v of CPU time in %v while ranks waited: they spin", used, wait)
	}
}

// TestFabricCloseAfterFailedStart: a device whose start fails after it
// joined its world closes without waiting for a progress loop that never
// ran.
func TestFabricCloseAfterFailedStart(t *testing.T) {
	for _, p := range fabricProviders() {
		t.Run(p, func(t *testing.T) {
			closed, err := rdma.CloseAfterFailedStart(p, 5*time.Second)
			if err == nil {
				t.Fatal("start over a closed endpoint succeeded")
			}
			if !closed {
				t.Fatalf("Close hung after start failed with %v", err)
			}
		})
	}
}

// The device runs on the provider named, not on a utility provider
// layered over it: asked for net (or for nothing, where libfabric 1.17
// offers net), it gets net's own FI_EP_RDM, not rxm over net's
// connections (net;ofi_rxm), which cuts every message above 16 KiB into
// segments and would be taken if the device asked for more inject
// bytes than net offers (128). Over net the eager limit defaults to
// DefaultFabricSocketEagerLimit: a 64 KiB message goes eager.
func TestFabricProviderNotLayered(t *testing.T) {
	for _, prov := range []string{"net", ""} {
		if prov == "" && os.Getenv("FI_PROVIDER") != "" {
			continue // FI_PROVIDER chooses
		}
		t.Run("provider="+prov, func(t *testing.T) {
			if !fabricOffers(t, "net") {
				t.Skip("libfabric offers no net provider")
			}
			jobs := joinFabric(t, 2, fabricConfig{Provider: prov})
			info := fabricDevice(jobs[0]).Info()
			for _, err := range runJobs(t, jobs, sendOne(bytes.Repeat([]byte{7}, 64<<10))) {
				if err != nil {
					t.Fatal(err)
				}
			}
			if !strings.HasPrefix(info, "provider net,") {
				t.Errorf("device: %s; want net's own endpoint", info)
			}
			if want := fmt.Sprintf("eager limit %d", rdma.DefaultSocketEagerLimit); !strings.Contains(info, want) {
				t.Errorf("device: %s; want %s", info, want)
			}
			if s, _ := fabricStats(jobs[0]); s.EagerMessages != 1 || s.RndzMessages != 0 {
				t.Errorf("a 64 KiB send: %d eager, %d rendezvous; want it eager", s.EagerMessages, s.RndzMessages)
			}
		})
	}
}

// sendOne has rank 0 send msg to rank 1, which checks what it receives.
func sendOne(msg []byte) func(w *comm.Comm) error {
	return func(w *comm.Comm) error {
		if w.Rank() == 0 {
			return w.Send(msg, comm.Byte, 1, 7)
		}
		got := make([]byte, len(msg))
		if _, err := w.Recv(got, comm.Byte, 0, 7); err != nil {
			return err
		}
		if !bytes.Equal(got, msg) {
			return errors.New("payload differs")
		}
		return nil
	}
}

// fabricOffers reports whether libfabric opens an endpoint on provider.
func fabricOffers(t *testing.T, provider string) bool {
	t.Helper()
	ep, err := fabric.Open(fabric.Config{Provider: provider})
	if err != nil {
		return false
	}
	ep.Close()
	return true
}

// Over shm an endpoint is a file in /dev/shm that outlives a process
// that does not close it (one that exits or is killed, or that the
// launcher kills when the job fails). Every process unlinks its file as
// soon as it heard from every other, which then has the region mapped:
// the job goes on working without the files.
func TestFabricShmFileUnlinked(t *testing.T) {
	if !slices.Contains(fabricProviders(), "shm") {
		t.Skip("FI_PROVIDER names another provider")
	}
	jobs := joinFabric(t, 3, fabricConfig{Provider: "shm"})
	for p, j := range jobs {
		f := rdma.EndpointFile(fabricDevice(j))
		if f == "" {
			t.Errorf("process %d: shm's endpoint has no file", p)
		}
		for start := time.Now(); f != "" && fileExists(f); time.Sleep(time.Millisecond) {
			if time.Since(start) > 5*time.Second {
				t.Errorf("process %d: %s is still there", p, f)
				break
			}
		}
	}
	for _, err := range runJobs(t, jobs, func(w *comm.Comm) error { // around a ring
		me, n := w.Rank(), w.Size()
		r, err := w.Isend(bytes.Repeat([]byte{byte(me)}, 1000), comm.Byte, (me+1)%n, 7)
		if err != nil {
			return err
		}
		got := make([]byte, 1000)
		if _, err := w.Recv(got, comm.Byte, (me+n-1)%n, 7); err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		if want := bytes.Repeat([]byte{byte((me + n - 1) % n)}, 1000); !bytes.Equal(got, want) {
			return errors.New("payload differs")
		}
		return w.Barrier()
	}) {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A process whose world aborts before it heard from every other unlinks
// its file at once: the launcher may end it before it closes.
func TestFabricShmFileUnlinkedOnAbort(t *testing.T) {
	if !slices.Contains(fabricProviders(), "shm") {
		t.Skip("FI_PROVIDER names another provider")
	}
	file, before, after, err := rdma.FileAfterAbort("shm", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !before || after {
		t.Errorf("%s: there before the start %v, after the abort %v; want true, false", file, before, after)
	}
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}
