package comm_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// MPI 3.1 §6.4.2 MPI_Comm_create: members get a communicator ranked in the
// group's order, non-members nil; the new context is isolated from the
// parent's.
func TestCreateFromGroup(t *testing.T) {
	run(t, 5, func(w *comm.Comm) error {
		g, err := w.Group().Incl([]int{3, 1, 4})
		if err != nil {
			return err
		}
		c, err := w.Create(g)
		if err != nil {
			return err
		}
		want := map[int]int{3: 0, 1: 1, 4: 2}
		r, member := want[w.Rank()]
		if !member {
			if c != nil {
				return fmt.Errorf("non-member got %v", c)
			}
			return w.Barrier()
		}
		if c == nil || c.Size() != 3 || c.Rank() != r {
			return fmt.Errorf("member got %v", c)
		}
		if got := c.Group().WorldRanks(); !slices.Equal(got, []int{3, 1, 4}) {
			return fmt.Errorf("group %v", got)
		}
		// The same tag on the parent and the child: each receive gets its
		// own communicator's message, whatever the order of arrival.
		next, prev := (r+1)%3, (r+2)%3
		if err := w.Send(payload(8, 100), comm.Byte, g.WorldRanks()[next], 5); err != nil {
			return err
		}
		if err := c.Send(payload(8, 200+uint64(r)), comm.Byte, next, 5); err != nil {
			return err
		}
		buf := make([]byte, 8)
		st, err := c.Recv(buf, comm.Byte, comm.AnySource, 5)
		if err != nil || val(buf) != 200+uint64(prev) || st.Source != prev {
			return fmt.Errorf("child recv: %v %d %v", st, val(buf), err)
		}
		if _, err := w.Recv(buf, comm.Byte, g.WorldRanks()[prev], 5); err != nil || val(buf) != 100 {
			return fmt.Errorf("parent recv: %d %v", val(buf), err)
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		return w.Barrier()
	})
}

// MPI-2.2 §6.4.2: members may pass different groups as long as they are
// disjoint; each group becomes its own communicator.
func TestCreateDisjointGroups(t *testing.T) {
	run(t, 6, func(w *comm.Comm) error {
		g, err := w.Group().RangeIncl([][3]int{{w.Rank() % 2, 5, 2}})
		if err != nil {
			return err
		}
		c, err := w.Create(g)
		if err != nil {
			return err
		}
		if c.Size() != 3 || c.Rank() != w.Rank()/2 {
			return fmt.Errorf("rank %d got rank %d of %d", w.Rank(), c.Rank(), c.Size())
		}
		// A ring in each communicator: messages never cross between them.
		next, prev := (c.Rank()+1)%3, (c.Rank()+2)%3
		if err := c.Send(payload(8, uint64(w.Rank())), comm.Byte, next, 0); err != nil {
			return err
		}
		buf := make([]byte, 8)
		if _, err := c.Recv(buf, comm.Byte, comm.AnySource, comm.AnyTag); err != nil {
			return err
		}
		if want := uint64(c.Group().WorldRanks()[prev]); val(buf) != want {
			return fmt.Errorf("rank %d got %d, want %d", w.Rank(), val(buf), want)
		}
		return nil
	})
}

// Bad groups fail on every member concerned, never hang.
func TestCreateErrors(t *testing.T) {
	t.Run("groups differ", func(t *testing.T) {
		errs := make([]error, 4)
		run(t, 4, func(w *comm.Comm) error {
			ranks := []int{0, 1, 2}
			if w.Rank() == 1 {
				ranks = []int{1, 0, 2} // same members, other order
			}
			g, err := w.Group().Incl(ranks)
			if err != nil {
				return err
			}
			c, err := w.Create(g)
			errs[w.Rank()] = err
			if w.Rank() == 3 && (c != nil || err != nil) {
				return fmt.Errorf("non-member: %v %v", c, err)
			}
			return w.Barrier()
		})
		for r := 0; r < 3; r++ {
			if !errors.Is(errs[r], comm.ErrArg) {
				t.Errorf("rank %d: %v", r, errs[r])
			}
		}
	})
	t.Run("not a subgroup", func(t *testing.T) {
		run(t, 4, func(w *comm.Comm) error {
			half, err := w.Split(w.Rank()/2, 0)
			if err != nil {
				return err
			}
			whole := w.Group() // has members outside half
			if _, err := half.Create(whole); !errors.Is(err, comm.ErrArg) {
				return fmt.Errorf("create from a larger group: %v", err)
			}
			return nil
		})
	})
	t.Run("freed parent", func(t *testing.T) {
		run(t, 2, func(w *comm.Comm) error {
			d, err := w.Dup()
			if err != nil {
				return err
			}
			if err := d.Free(); err != nil {
				return err
			}
			if _, err := d.Create(w.Group()); !errors.Is(err, comm.ErrClosed) {
				return fmt.Errorf("create on freed: %v", err)
			}
			return nil
		})
	})
	t.Run("nil", func(t *testing.T) {
		var c *comm.Comm
		if _, err := c.Create(comm.Group{}); !errors.Is(err, comm.ErrArg) {
			t.Fatalf("create on nil: %v", err)
		}
	})
}

// An empty group: every caller gets nil, nil.
func TestCreateEmpty(t *testing.T) {
	run(t, 3, func(w *comm.Comm) error {
		c, err := w.Create(comm.Group{})
		if c != nil || err != nil {
			return fmt.Errorf("empty group: %v %v", c, err)
		}
		return nil
	})
}

// MPI 3.1 §6.4.3 MPI_Comm_free: later use fails with ErrClosed; the world
// cannot be freed; free twice fails.
func TestFree(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		d, err := w.Dup()
		if err != nil {
			return err
		}
		if err := d.Free(); err != nil {
			return err
		}
		checks := map[string]error{
			"free again": d.Free(),
			"send":       d.Send(nil, comm.Byte, 0, 0),
			"recv":       second(d.Recv(nil, comm.Byte, 0, 0)),
			"isend":      second(d.Isend(nil, comm.Byte, 0, 0)),
			"barrier":    d.Barrier(),
			"dup":        second(d.Dup()),
			"split":      second(d.Split(0, 0)),
			"probe":      second(d.Probe(0, 0)),
			"send null":  d.Send(nil, comm.Byte, comm.ProcNull, 0),
		}
		for name, err := range checks {
			if !errors.Is(err, comm.ErrClosed) {
				return fmt.Errorf("%s after free: %v", name, err)
			}
		}
		if err := w.Free(); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("free of world: %v", err)
		}
		var nilComm *comm.Comm
		if err := nilComm.Free(); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("free of nil: %v", err)
		}
		// The world still works, and so does the other rank's handle until
		// that rank frees it: Free is local.
		return w.Barrier()
	})
}

// Operations started before Free complete as usual.
func TestFreeKeepsPendingOperations(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		d, err := w.Dup()
		if err != nil {
			return err
		}
		if w.Rank() == 1 {
			buf := make([]byte, 8)
			r, err := d.Irecv(buf, comm.Byte, 0, 1)
			if err != nil {
				return err
			}
			if err := d.Free(); err != nil {
				return err
			}
			if err := w.Barrier(); err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil || val(buf) != 7 {
				return fmt.Errorf("pending receive: %d %v", val(buf), err)
			}
			return nil
		}
		if err := w.Barrier(); err != nil {
			return err
		}
		return d.Send(payload(8, 7), comm.Byte, 1, 1)
	})
}

// MPI 3.1 §6.4.1 MPI_Comm_compare.
func TestCompareComms(t *testing.T) {
	run(t, 4, func(w *comm.Comm) error {
		w2 := w
		d, err := w.Dup()
		if err != nil {
			return err
		}
		rev, err := w.Split(0, -w.Rank()) // same members, reversed
		if err != nil {
			return err
		}
		half, err := w.Split(w.Rank()/2, 0)
		if err != nil {
			return err
		}
		g, err := w.Group().Incl([]int{0, 1, 2, 3})
		if err != nil {
			return err
		}
		created, err := w.Create(g)
		if err != nil {
			return err
		}
		cases := []struct {
			name string
			a, b *comm.Comm
			want int
		}{
			{"itself", w, w2, comm.Ident},
			{"dup", w, d, comm.Congruent},
			{"created from the whole group", w, created, comm.Congruent},
			{"reversed", w, rev, comm.Similar},
			{"half", w, half, comm.Unequal},
			{"nil", w, nil, comm.Unequal},
		}
		for _, c := range cases {
			if got := comm.Compare(c.a, c.b); got != c.want {
				return fmt.Errorf("%s: %d, want %d", c.name, got, c.want)
			}
			if got := comm.Compare(c.b, c.a); got != c.want {
				return fmt.Errorf("%s swapped: %d, want %d", c.name, got, c.want)
			}
		}
		return nil
	})
}

// Communicators of different runs are Unequal.
func TestCompareAcrossRuns(t *testing.T) {
	var mu sync.Mutex
	var worlds []*comm.Comm
	for i := 0; i < 2; i++ {
		run(t, 1, func(w *comm.Comm) error {
			mu.Lock()
			worlds = append(worlds, w)
			mu.Unlock()
			return nil
		})
	}
	if got := comm.Compare(worlds[0], worlds[1]); got != comm.Unequal {
		t.Fatalf("worlds of two runs: %d", got)
	}
}

// MPI 3.1 §3.11: sends to and receives from ProcNull succeed at once and
// move nothing; the receive reports source ProcNull, tag AnyTag, count 0.
func TestProcNull(t *testing.T) {
	run(t, 1, func(w *comm.Comm) error {
		if err := w.Send([]byte("x"), comm.Byte, comm.ProcNull, 3); err != nil {
			return err
		}
		if err := w.Ssend([]byte("x"), comm.Byte, comm.ProcNull, 3); err != nil {
			return err
		}
		buf := []byte("keep")
		st, err := w.Recv(buf, comm.Float64, comm.ProcNull, comm.AnyTag)
		if err != nil || st != (comm.Status{Source: comm.ProcNull, Tag: comm.AnyTag}) || string(buf) != "keep" {
			return fmt.Errorf("recv from null: %v %q %v", st, buf, err)
		}
		rs, err := w.Isend(buf, comm.Byte, comm.ProcNull, 0)
		if err != nil {
			return err
		}
		rr, err := w.Irecv(buf, comm.Byte, comm.ProcNull, 0)
		if err != nil {
			return err
		}
		if err := comm.WaitAll(rs, rr); err != nil {
			return err
		}
		if st, err := rr.Wait(); err != nil || st.Source != comm.ProcNull {
			return fmt.Errorf("irecv from null: %v %v", st, err)
		}
		st, err = w.Sendrecv(buf, comm.Byte, comm.ProcNull, 0, buf, comm.Byte, comm.ProcNull, 0)
		if err != nil || st.Source != comm.ProcNull || string(buf) != "keep" {
			return fmt.Errorf("sendrecv with null: %v %v", st, err)
		}
		got, st, err := w.RecvOwned(comm.Byte, comm.ProcNull, 1)
		if err != nil || len(got) != 0 || st.Source != comm.ProcNull {
			return fmt.Errorf("recv owned from null: %v %v %v", got, st, err)
		}
		// The usual checks still apply.
		if err := w.Send(nil, comm.Byte, comm.ProcNull, -1); !errors.Is(err, comm.ErrTag) {
			return fmt.Errorf("send to null with tag -1: %v", err)
		}
		if _, err := w.Recv(nil, comm.Byte, comm.ProcNull, -5); !errors.Is(err, comm.ErrTag) {
			return fmt.Errorf("recv from null with tag -5: %v", err)
		}
		if err := w.Send(nil, comm.Type(200), comm.ProcNull, 0); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("send to null of a bad type: %v", err)
		}
		return nil
	})
}

// ProcNull after the run: ErrClosed like any rank.
func TestProcNullAfterRun(t *testing.T) {
	var kept *comm.Comm
	if err := mpgo.Run(1, func(w *comm.Comm) error { kept = w; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := kept.Send(nil, comm.Byte, comm.ProcNull, 0); !errors.Is(err, comm.ErrClosed) {
		t.Fatalf("send to null after run: %v", err)
	}
}
