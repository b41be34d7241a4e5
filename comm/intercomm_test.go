package comm_test

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// halves splits w into the even and the odd world ranks and joins them with
// an intercommunicator (leaders: world ranks 0 and 1). It returns the local
// communicator, the intercommunicator and whether the caller is even.
func halves(w *comm.Comm) (*comm.Comm, *comm.Intercomm, bool, error) {
	even := w.Rank()%2 == 0
	local, err := w.Split(w.Rank()%2, w.Rank())
	if err != nil {
		return nil, nil, even, err
	}
	remoteLeader := 1
	if !even {
		remoteLeader = 0
	}
	ic, err := local.CreateIntercomm(0, w, remoteLeader, 99)
	return local, ic, even, err
}

// MPI 3.1 §6.6.2 MPI_Intercomm_create: sizes and groups of both sides.
func TestIntercommCreate(t *testing.T) {
	run(t, 5, func(w *comm.Comm) error {
		_, ic, even, err := halves(w)
		if err != nil {
			return err
		}
		evens, odds := []int{0, 2, 4}, []int{1, 3}
		mine, theirs := evens, odds
		if !even {
			mine, theirs = odds, evens
		}
		if ic.Size() != len(mine) || ic.RemoteSize() != len(theirs) || ic.Rank() != w.Rank()/2 {
			return fmt.Errorf("size %d remote %d rank %d", ic.Size(), ic.RemoteSize(), ic.Rank())
		}
		if g := ic.Group(); !slices.Equal(g.WorldRanks(), mine) || g.Rank() != w.Rank()/2 {
			return fmt.Errorf("local group %v rank %d", g, g.Rank())
		}
		if g := ic.RemoteGroup(); !slices.Equal(g.WorldRanks(), theirs) || g.Rank() != comm.Undefined {
			return fmt.Errorf("remote group %v rank %d", g, g.Rank())
		}
		return nil
	})
}

// MPI 3.1 §6.6: point-to-point on an intercommunicator names ranks of the
// remote group, in both directions; Status.Source is the sender's rank in
// the remote group; wildcards match only the remote group's messages.
func TestIntercommPointToPoint(t *testing.T) {
	run(t, 6, func(w *comm.Comm) error {
		local, ic, even, err := halves(w)
		if err != nil {
			return err
		}
		me := ic.Rank()
		// Each member sends its rank to every remote member, tag = sender's
		// local rank, and also a decoy on the local communicator with the
		// same tag, which a wildcard receive on ic must not take.
		var reqs []*comm.Request
		for dst := 0; dst < ic.RemoteSize(); dst++ {
			r, err := ic.Isend(payload(8, uint64(w.Rank())), comm.Byte, dst, me)
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
		if err := local.Send(payload(8, 999), comm.Byte, (me+1)%local.Size(), me); err != nil {
			return err
		}
		var sources []int
		buf := make([]byte, 8)
		for i := 0; i < ic.RemoteSize(); i++ {
			st, err := ic.Recv(buf, comm.Byte, comm.AnySource, comm.AnyTag)
			if err != nil {
				return err
			}
			if st.Tag != st.Source || int(val(buf)) != ic.RemoteGroup().WorldRanks()[st.Source] {
				return fmt.Errorf("from remote %d tag %d: world rank %d", st.Source, st.Tag, val(buf))
			}
			sources = append(sources, st.Source)
		}
		sort.Ints(sources)
		for i, s := range sources {
			if s != i {
				return fmt.Errorf("sources %v", sources)
			}
		}
		if _, err := local.Recv(buf, comm.Byte, comm.AnySource, comm.AnyTag); err != nil || val(buf) != 999 {
			return fmt.Errorf("decoy: %d %v", val(buf), err)
		}
		if err := comm.WaitAll(reqs...); err != nil {
			return err
		}
		// Keep the wildcard receives above away from the messages below.
		if err := w.Barrier(); err != nil {
			return err
		}
		// A named source, sync mode, and Sendrecv across the groups.
		if even && me == 0 {
			if err := ic.Ssend([]byte("hello"), comm.Byte, 2, 7); err != nil {
				return err
			}
		}
		if !even && me == 2 {
			st, err := ic.Probe(0, 7)
			if err != nil || st.Count != 5 || st.Source != 0 {
				return fmt.Errorf("probe: %v %v", st, err)
			}
			b := make([]byte, 5)
			if st, err := ic.Recv(b, comm.Byte, 0, 7); err != nil || string(b) != "hello" || st.Source != 0 {
				return fmt.Errorf("recv: %q %v %v", b, st, err)
			}
		}
		partner := me % ic.RemoteSize()
		if ic.RemoteSize() == ic.Size() {
			out, in := payload(8, uint64(w.Rank())), make([]byte, 8)
			st, err := ic.Sendrecv(out, comm.Byte, partner, 8, in, comm.Byte, partner, 8)
			if err != nil || st.Source != partner || int(val(in)) != ic.RemoteGroup().WorldRanks()[partner] {
				return fmt.Errorf("sendrecv: %v %d %v", st, val(in), err)
			}
		}
		return w.Barrier()
	})
}

// Messages between a pair on an intercommunicator are non-overtaking, and
// receives match in posting order, eager and rendezvous alike.
func TestIntercommOrder(t *testing.T) {
	sizes := []int{8, 100 << 10, 0, 70 << 10, 16}
	const n = 60
	run(t, 2, func(w *comm.Comm) error {
		self, err := w.Split(w.Rank(), 0)
		if err != nil {
			return err
		}
		ic, err := self.CreateIntercomm(0, w, 1-w.Rank(), 1)
		if err != nil {
			return err
		}
		if w.Rank() == 0 {
			var reqs []*comm.Request
			for i := 0; i < n; i++ {
				r, err := ic.Isend(payload(sizes[i%len(sizes)], uint64(i)), comm.Byte, 0, i%3)
				if err != nil {
					return err
				}
				reqs = append(reqs, r)
			}
			return comm.WaitAll(reqs...)
		}
		buf := make([]byte, 128<<10)
		// Pre-post a receive for tag 1 (message 1), then drain with wildcards.
		r1, err := ic.Irecv(buf, comm.Byte, 0, 1)
		if err != nil {
			return err
		}
		rest := make([]byte, 128<<10)
		for i := 0; i < n; i++ {
			if i == 1 {
				if _, err := r1.Wait(); err != nil || val(buf) != 1 {
					return fmt.Errorf("pre-posted: %d %v", val(buf), err)
				}
				continue
			}
			st, err := ic.Recv(rest, comm.Byte, comm.AnySource, comm.AnyTag)
			if err != nil {
				return err
			}
			if got := val(rest); got != uint64(i) || st.Tag != i%3 || st.Source != 0 {
				return fmt.Errorf("message %d: got %d %v", i, got, st)
			}
		}
		return nil
	})
}

// MPI 3.1 §6.6.2 MPI_Intercomm_merge: the group passing high = false comes
// first; with equal values the group of the lower first world rank does.
func TestIntercommMerge(t *testing.T) {
	cases := []struct {
		name            string
		evenHigh, oddHi bool
		want            []int
	}{
		{"evens low", false, true, []int{0, 2, 4, 1, 3}},
		{"evens high", true, false, []int{1, 3, 0, 2, 4}},
		{"both low", false, false, []int{0, 2, 4, 1, 3}},
		{"both high", true, true, []int{0, 2, 4, 1, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run(t, 5, func(w *comm.Comm) error {
				_, ic, even, err := halves(w)
				if err != nil {
					return err
				}
				high := c.oddHi
				if even {
					high = c.evenHigh
				}
				m, err := ic.Merge(high)
				if err != nil {
					return err
				}
				if got := m.Group().WorldRanks(); !slices.Equal(got, c.want) {
					return fmt.Errorf("merged %v, want %v", got, c.want)
				}
				if m.Rank() != slices.Index(c.want, w.Rank()) {
					return fmt.Errorf("merged rank %d", m.Rank())
				}
				if comm.Compare(m, w) == comm.Ident {
					return errors.New("merged is the world")
				}
				// The merged communicator works: a ring.
				n := m.Size()
				buf := make([]byte, 8)
				st, err := m.Sendrecv(payload(8, uint64(m.Rank())), comm.Byte, (m.Rank()+1)%n, 0,
					buf, comm.Byte, (m.Rank()+n-1)%n, 0)
				if err != nil || val(buf) != uint64((m.Rank()+n-1)%n) || st.Source != (m.Rank()+n-1)%n {
					return fmt.Errorf("ring on merged: %d %v %v", val(buf), st, err)
				}
				return m.Barrier()
			})
		})
	}
}

// Bad arguments to CreateIntercomm and Merge fail, on every member
// concerned, without hanging.
func TestIntercommErrors(t *testing.T) {
	t.Run("leader out of range", func(t *testing.T) {
		run(t, 3, func(w *comm.Comm) error {
			if _, err := w.CreateIntercomm(3, w, 0, 0); !errors.Is(err, comm.ErrRank) {
				return fmt.Errorf("leader 3 of 3: %v", err)
			}
			return nil
		})
	})
	t.Run("leaders differ", func(t *testing.T) {
		run(t, 3, func(w *comm.Comm) error {
			if _, err := w.CreateIntercomm(w.Rank(), w, 0, 0); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("leaders differ: %v", err)
			}
			return nil
		})
	})
	t.Run("overlapping groups", func(t *testing.T) {
		run(t, 3, func(w *comm.Comm) error {
			// The leader's peer is itself: both "groups" are w.
			if _, err := w.CreateIntercomm(0, w, 0, 0); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("overlapping groups: %v", err)
			}
			return nil
		})
	})
	t.Run("bad tag at the leader", func(t *testing.T) {
		errs := make([]error, 4)
		err := mpgo.Run(4, func(w *comm.Comm) error {
			local, err := w.Split(w.Rank()%2, w.Rank())
			if err != nil {
				return err
			}
			tag := 3
			if w.Rank() == 0 {
				tag = -1
			}
			_, errs[w.Rank()] = local.CreateIntercomm(0, w, 1-w.Rank()%2, tag)
			return nil
		})
		// The even leader fails at once and tells its group; the odd
		// leader waits for a message that never comes: the deadlock
		// detector ends it, and it tells its group.
		if !errors.Is(err, comm.ErrDeadlock) {
			t.Errorf("run: %v", err)
		}
		for r, e := range errs {
			want := comm.ErrDeadlock
			if r%2 == 0 {
				want = comm.ErrTag
			}
			if !errors.Is(e, want) {
				t.Errorf("rank %d: %v, want %v", r, e, want)
			}
		}
	})
	t.Run("nil peer at the leader", func(t *testing.T) {
		run(t, 2, func(w *comm.Comm) error {
			self, err := w.Split(w.Rank(), 0)
			if err != nil {
				return err
			}
			if w.Rank() == 0 {
				if _, err := self.CreateIntercomm(0, nil, 1, 0); !errors.Is(err, comm.ErrArg) {
					return fmt.Errorf("nil peer: %v", err)
				}
			}
			return nil
		})
	})
	t.Run("merge with mixed high", func(t *testing.T) {
		errs := make([]error, 5)
		run(t, 5, func(w *comm.Comm) error {
			_, ic, _, err := halves(w)
			if err != nil {
				return err
			}
			_, errs[w.Rank()] = ic.Merge(w.Rank() == 2) // evens disagree
			return nil
		})
		for r, e := range errs {
			if !errors.Is(e, comm.ErrArg) {
				t.Errorf("rank %d: %v", r, e)
			}
		}
	})
	t.Run("bad ranks, free", func(t *testing.T) {
		run(t, 4, func(w *comm.Comm) error {
			_, ic, _, err := halves(w)
			if err != nil {
				return err
			}
			if err := ic.Send(nil, comm.Byte, 2, 0); !errors.Is(err, comm.ErrRank) {
				return fmt.Errorf("send to remote 2 of 2: %v", err)
			}
			if _, err := ic.Recv(nil, comm.Byte, -3, 0); !errors.Is(err, comm.ErrRank) {
				return fmt.Errorf("recv from -3: %v", err)
			}
			if err := ic.Free(); err != nil {
				return err
			}
			if err := ic.Send(nil, comm.Byte, 0, 0); !errors.Is(err, comm.ErrClosed) {
				return fmt.Errorf("send after free: %v", err)
			}
			if _, err := ic.Merge(false); !errors.Is(err, comm.ErrClosed) {
				return fmt.Errorf("merge after free: %v", err)
			}
			if err := ic.Free(); !errors.Is(err, comm.ErrClosed) {
				return fmt.Errorf("free twice: %v", err)
			}
			var nilIC *comm.Intercomm
			if _, err := nilIC.Merge(true); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("merge of nil: %v", err)
			}
			if err := nilIC.Send(nil, comm.Byte, 0, 0); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("send on nil: %v", err)
			}
			if _, err := nilIC.Irecv(nil, comm.Byte, 0, 0); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("irecv on nil: %v", err)
			}
			return nil
		})
	})
}
