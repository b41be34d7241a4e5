package comm_test

import (
	"fmt"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// MPI 3.1 §3.5: messages between one pair on one communicator are
// non-overtaking, whatever their size (eager or rendezvous) and mode.
func TestNonOvertakingPerPair(t *testing.T) {
	sizes := []int{8, 100, 64 << 10, 200 << 10, 0}
	const n = 300
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			var reqs []*comm.Request
			for i := 0; i < n; i++ {
				b := payload(sizes[i%len(sizes)], uint64(i))
				if i%3 == 0 {
					r, err := w.Isend(b, comm.Byte, 1, i%4)
					if err != nil {
						return err
					}
					reqs = append(reqs, r)
				} else if err := w.Send(b, comm.Byte, 1, i%4); err != nil && i%3 != 0 {
					return err
				}
			}
			return comm.WaitAll(reqs...)
		}
		buf := make([]byte, 256<<10)
		for i := 0; i < n; i++ {
			st, err := w.Recv(buf, comm.Byte, 0, comm.AnyTag)
			if err != nil {
				return err
			}
			if got := val(buf); got != uint64(i) || st.Tag != i%4 {
				return fmt.Errorf("message %d: got %d tag %d", i, got, st.Tag)
			}
		}
		return nil
	})
}

// Order is kept per context: a receiver that drains a Dup first still sees
// each communicator's messages in order.
func TestNonOvertakingPerContext(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		d, err := w.Dup()
		if err != nil {
			return err
		}
		const n = 50
		if w.Rank() == 0 {
			for i := 0; i < n; i++ {
				if err := w.Send(payload(8, uint64(i)), comm.Byte, 1, 7); err != nil {
					return err
				}
				if err := d.Send(payload(8, uint64(1000+i)), comm.Byte, 1, 7); err != nil {
					return err
				}
			}
			return nil
		}
		buf := make([]byte, 8)
		for _, c := range []struct {
			c    *comm.Comm
			base uint64
		}{{d, 1000}, {w, 0}} {
			for i := 0; i < n; i++ {
				if _, err := c.c.Recv(buf, comm.Byte, comm.AnySource, 7); err != nil {
					return err
				}
				if got := val(buf); got != c.base+uint64(i) {
					return fmt.Errorf("on %v message %d: got %d", c.c, i, got)
				}
			}
		}
		return nil
	})
}

// Receives are matched in the order they were posted, wildcards included:
// an AnySource receive posted before a specific one gets the first message.
func TestWildcardsMatchInPostingOrder(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			if err := w.Barrier(); err != nil {
				return err
			}
			for i := 0; i < 4; i++ {
				if err := w.Send(payload(8, uint64(i)), comm.Byte, 1, 5); err != nil {
					return err
				}
			}
			return nil
		}
		bufs := make([][]byte, 4)
		reqs := make([]*comm.Request, 4)
		specs := []struct{ src, tag int }{{comm.AnySource, comm.AnyTag}, {0, 5}, {comm.AnySource, 5}, {0, comm.AnyTag}}
		for i, s := range specs {
			bufs[i] = make([]byte, 8)
			r, err := w.Irecv(bufs[i], comm.Byte, s.src, s.tag)
			if err != nil {
				return err
			}
			reqs[i] = r
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		if err := comm.WaitAll(reqs...); err != nil {
			return err
		}
		for i := range bufs {
			if got := val(bufs[i]); got != uint64(i) {
				return fmt.Errorf("receive %d (%+v) got message %d", i, specs[i], got)
			}
		}
		return nil
	})
}

// A wildcard receive takes messages in arrival order: of the messages
// already waiting, the oldest that matches.
func TestWildcardTakesOldestArrival(t *testing.T) {
	const senders = 5
	run(t, senders+1, func(w *comm.Comm) error {
		// Senders go one after another, each after the previous one's
		// message has arrived (a token passes along), so arrival order is
		// known: rank 1, 2, ..., senders.
		if w.Rank() > 0 {
			if w.Rank() > 1 {
				if _, err := w.Recv(nil, comm.Byte, w.Rank()-1, 99); err != nil {
					return err
				}
			}
			if err := w.Send(payload(8, uint64(w.Rank())), comm.Byte, 0, w.Rank()%2); err != nil {
				return err
			}
			if w.Rank() < senders {
				return w.Send(nil, comm.Byte, w.Rank()+1, 99)
			}
			return w.Send(nil, comm.Byte, 0, 100)
		}
		if _, err := w.Recv(nil, comm.Byte, senders, 100); err != nil {
			return err
		}
		buf := make([]byte, 8)
		for want := 1; want <= senders; want++ {
			st, err := w.Recv(buf, comm.Byte, comm.AnySource, comm.AnyTag)
			if err != nil {
				return err
			}
			if st.Source != want || val(buf) != uint64(want) {
				return fmt.Errorf("wildcard receive %d got rank %d's message", want, st.Source)
			}
		}
		return nil
	})
}

// Probe returns the status of the message the next matching receive gets.
func TestProbeThenRecv(t *testing.T) {
	const n = 6
	run(t, n, func(w *comm.Comm) error {
		if w.Rank() != 0 {
			for i := 0; i < 20; i++ {
				b := payload(8*(w.Rank()+i), uint64(w.Rank()*1000+i))
				if err := w.Send(b, comm.Byte, 0, w.Rank()); err != nil {
					return err
				}
			}
			return nil
		}
		next := make([]int, n)
		for k := 0; k < 20*(n-1); k++ {
			st, err := w.Probe(comm.AnySource, comm.AnyTag)
			if err != nil {
				return err
			}
			buf := make([]byte, st.Count)
			st2, err := w.Recv(buf, comm.Byte, st.Source, st.Tag)
			if err != nil {
				return err
			}
			if st2 != st {
				return fmt.Errorf("probe said %v, recv got %v", st, st2)
			}
			want := uint64(st.Source*1000 + next[st.Source])
			if val(buf) != want {
				return fmt.Errorf("from %d: got %d want %d", st.Source, val(buf), want)
			}
			next[st.Source]++
		}
		_, ok, err := w.Iprobe(comm.AnySource, comm.AnyTag)
		if ok || err != nil {
			return fmt.Errorf("Iprobe after draining: %v %v", ok, err)
		}
		return nil
	})
}

// Iprobe sees nothing before a message arrives and the message after.
func TestIprobe(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		if w.Rank() == 0 {
			if _, ok, err := w.Iprobe(1, 3); ok || err != nil {
				return fmt.Errorf("early Iprobe: %v %v", ok, err)
			}
			if err := w.Barrier(); err != nil {
				return err
			}
			if err := w.Barrier(); err != nil {
				return err
			}
			st, ok, err := w.Iprobe(1, 3)
			if !ok || err != nil || st.Count != 24 || st.Source != 1 {
				return fmt.Errorf("Iprobe: %v %v %v", st, ok, err)
			}
			_, err = w.Recv(make([]byte, 24), comm.Byte, 1, 3)
			return err
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		if err := w.Send(make([]byte, 24), comm.Byte, 0, 3); err != nil {
			return err
		}
		return w.Barrier()
	})
}

func TestManyToOneStorm(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer setProcs(procs)()
			senders, per := 31, 400
			if testing.Short() {
				senders, per = 15, 100
			}
			run(t, senders+1, func(w *comm.Comm) error {
				if w.Rank() > 0 {
					for i := 0; i < per; i++ {
						size := 8
						if i%50 == 0 {
							size = 70 << 10 // rendezvous now and then
						}
						if err := w.Send(payload(size, uint64(i)), comm.Byte, 0, i%3); err != nil {
							return err
						}
					}
					return nil
				}
				next := make([]uint64, senders+1)
				buf := make([]byte, 70<<10)
				for k := 0; k < senders*per; k++ {
					st, err := w.Recv(buf, comm.Byte, comm.AnySource, comm.AnyTag)
					if err != nil {
						return err
					}
					if got := val(buf); got != next[st.Source] || st.Tag != int(got%3) {
						return fmt.Errorf("from %d: got %d tag %d, want %d", st.Source, got, st.Tag, next[st.Source])
					}
					next[st.Source]++
				}
				return nil
			})
		})
	}
}

// Mixed wildcard and specific receives racing with many senders.
func TestMixedWildcardHammer(t *testing.T) {
	defer setProcs(4)()
	senders, per := 8, 300
	if testing.Short() {
		per = 60
	}
	run(t, senders+1, func(w *comm.Comm) error {
		if w.Rank() > 0 {
			for i := 0; i < per; i++ {
				if err := w.Send(payload(8, uint64(i)), comm.Byte, 0, 1); err != nil {
					return err
				}
			}
			return nil
		}
		next := make([]uint64, senders+1)
		buf := make([]byte, 8)
		for k := 0; k < senders*per; k++ {
			src := comm.AnySource
			if k%2 == 1 {
				src = 1 + k%senders
				if next[src] == uint64(per) {
					src = comm.AnySource
				}
			}
			st, err := w.Recv(buf, comm.Byte, src, comm.AnyTag)
			if err != nil {
				return err
			}
			if got := val(buf); got != next[st.Source] {
				return fmt.Errorf("from %d: got %d want %d", st.Source, got, next[st.Source])
			}
			next[st.Source]++
		}
		return nil
	})
}

func TestTokenRing1000(t *testing.T) {
	n := 1000
	run(t, n, func(w *comm.Comm) error {
		tok := make([]byte, 8)
		next, prev := (w.Rank()+1)%n, (w.Rank()-1+n)%n
		if w.Rank() == 0 {
			copy(tok, payload(8, 0))
			if err := w.Send(tok, comm.Byte, next, 0); err != nil {
				return err
			}
			if _, err := w.Recv(tok, comm.Byte, prev, 0); err != nil {
				return err
			}
			if want := uint64(n * (n - 1) / 2); val(tok) != want {
				return fmt.Errorf("token %d, want %d", val(tok), want)
			}
			return nil
		}
		if _, err := w.Recv(tok, comm.Byte, prev, 0); err != nil {
			return err
		}
		copy(tok, payload(8, val(tok)+uint64(w.Rank())))
		return w.Send(tok, comm.Byte, next, 0)
	})
}

func TestBarrierManyRanks(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 2000
	}
	if err := mpgo.Run(n, func(w *comm.Comm) error { return w.Barrier() }); err != nil {
		t.Fatal(err)
	}
}
