package comm_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mpgo/mpgo/comm"
)

// runWorld runs fn on every rank of a world made with cfg.
func runWorld(t *testing.T, n int, cfg comm.Config, fn func(w *comm.Comm) error) []error {
	t.Helper()
	w, err := comm.NewWorld(n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.RankDone(r)
			if errs[r] = fn(w.Comm(r)); errs[r] != nil {
				w.Abort()
			}
		}()
	}
	wg.Wait()
	w.Close()
	return errs
}

// checkShared checks rank's communicator of SplitType(SplitShared, key):
// its members are the ranks of c on rank's node, ordered by key (ties by
// rank), as node and key say of every rank.
func checkShared(c *comm.Comm, node, key func(r int) int) error {
	s, err := c.SplitType(comm.SplitShared, key(c.Rank()))
	if err != nil {
		return err
	}
	var want []int // c's ranks on this node, in key order
	for k := range 100 {
		for r := range c.Size() {
			if node(r) == node(c.Rank()) && key(r) == k {
				want = append(want, r)
			}
		}
	}
	if s.Size() != len(want) || want[s.Rank()] != c.Rank() {
		return fmt.Errorf("rank %d: rank %d of %d in its node's communicator, want %d of %d (%v)", c.Rank(), s.Rank(), s.Size(), indexOf(want, c.Rank()), len(want), want)
	}
	// The members are those ranks: each sends its rank in c to all.
	got := make([]int, s.Size())
	for i := range s.Size() {
		if err := s.SendValue(c.Rank(), i, 7); err != nil {
			return err
		}
	}
	for i := range s.Size() {
		if _, err := s.RecvValue(&got[i], i, 7); err != nil {
			return err
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("rank %d: members %v, want %v", c.Rank(), got, want)
	}
	return nil
}

func indexOf(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// MPI_Comm_split_type with MPI_COMM_TYPE_SHARED: the ranks that share
// memory, ordered by key, ties by rank.
func TestSplitTypeShared(t *testing.T) {
	key := func(r int) int { return (7 - r) % 3 }
	t.Run("one process", func(t *testing.T) { // no node map: one node
		for r, err := range runWorld(t, 5, comm.Config{}, func(w *comm.Comm) error {
			return checkShared(w, func(int) int { return 0 }, key)
		}) {
			if err != nil {
				t.Errorf("rank %d: %v", r, err)
			}
		}
	})
	t.Run("nodes", func(t *testing.T) { // a node map: ranks of a parity share a node
		node := func(r int) int { return r % 2 }
		for r, err := range runWorld(t, 7, comm.Config{Node: node}, func(w *comm.Comm) error {
			return checkShared(w, node, key)
		}) {
			if err != nil {
				t.Errorf("rank %d: %v", r, err)
			}
		}
	})
	t.Run("processes", func(t *testing.T) { // processes and no node map: each process a node
		for r, err := range runProcs(t, 3, 2, func(w *comm.Comm) error {
			return checkShared(w, func(r int) int { return r / 2 }, key)
		}) {
			if err != nil {
				t.Errorf("rank %d: %v", r, err)
			}
		}
	})
	t.Run("of a split", func(t *testing.T) { // the node's members of a communicator split from the world
		node := func(r int) int { return r / 3 }
		for r, err := range runWorld(t, 6, comm.Config{Node: node}, func(w *comm.Comm) error {
			odd, err := w.Split(w.Rank()%2, w.Rank())
			if err != nil {
				return err
			}
			// odd's rank i is world rank 2i+parity.
			return checkShared(odd, func(i int) int { return node(2*i + w.Rank()%2) }, func(int) int { return 0 })
		}) {
			if err != nil {
				t.Errorf("rank %d: %v", r, err)
			}
		}
	})
}

// An unknown split kind fails with ErrArg on the ranks that passed it,
// and nobody hangs.
func TestSplitTypeBadKind(t *testing.T) {
	errs := runWorld(t, 3, comm.Config{}, func(w *comm.Comm) error {
		kind := comm.SplitShared
		if w.Rank() == 1 {
			kind = 99
		}
		s, err := w.SplitType(kind, 0)
		if w.Rank() == 1 {
			if !errors.Is(err, comm.ErrArg) || s != nil {
				return fmt.Errorf("SplitType(99): %v, %v; want ErrArg", s, err)
			}
			return nil
		}
		if err != nil || s.Size() != 2 {
			return fmt.Errorf("SplitType(SplitShared) beside a bad kind: %v", err)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
