package comm_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mpgo/mpgo/comm"
)

// rec is a value with the things gob carries that bytes do not: a map, a
// string, a nested slice.
type rec struct {
	Rank int
	Name string
	Tags map[string]int
	Path []int
}

func recOf(r, j int) rec {
	return rec{Rank: r, Name: strings.Repeat("x", r+j), Tags: map[string]int{"to": j}, Path: []int{r, j}}
}

func (a rec) is(b rec) bool {
	return a.Rank == b.Rank && a.Name == b.Name && a.Tags["to"] == b.Tags["to"] && len(a.Path) == 2 && a.Path[1] == b.Path[1]
}

// AllgatherValue, ScatterValue and AlltoallValue against their
// definitions, on goroutine ranks and across processes.
func TestValueCollectives(t *testing.T) {
	fn := func(w *comm.Comm) error {
		n, me := w.Size(), w.Rank()
		var all []rec
		if err := w.AllgatherValue(recOf(me, 0), &all); err != nil {
			return err
		}
		for i := range n {
			if len(all) != n || !all[i].is(recOf(i, 0)) {
				return fmt.Errorf("AllgatherValue: %v", all)
			}
		}
		var in []rec
		if me == 1%n {
			for j := range n {
				in = append(in, recOf(1%n, j))
			}
		}
		var got rec
		if err := w.ScatterValue(in, &got, 1%n); err != nil {
			return err
		}
		if !got.is(recOf(1%n, me)) {
			return fmt.Errorf("ScatterValue: %+v", got)
		}
		out := make([]rec, n)
		for j := range out {
			out[j] = recOf(me, j)
		}
		var back []rec
		if err := w.AlltoallValue(out, &back); err != nil {
			return err
		}
		for i := range n {
			if !back[i].is(recOf(i, me)) {
				return fmt.Errorf("AlltoallValue from %d: %+v", i, back[i])
			}
		}
		return nil
	}
	for _, n := range []int{1, 2, 5, 17} {
		run(t, n, fn)
	}
	for r, err := range runProcs(t, 3, 2, fn) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// A member that cannot take part (a value gob cannot encode, a bad out
// pointer) fails the value collective on every member, with ErrArg.
func TestValueCollectiveFailures(t *testing.T) {
	run(t, 4, func(w *comm.Comm) error {
		me := w.Rank()
		var v any = me
		if me == 2 {
			v = func() {} // gob cannot encode a func
		}
		var all []int
		if err := w.AllgatherValue(v, &all); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("rank %d: AllgatherValue with rank 2's func: %v", me, err)
		}
		in := []any{0, 1, 2, 3}
		if me == 3 {
			in[1] = make(chan int)
		}
		var back []int
		if err := w.AlltoallValue(in, &back); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("rank %d: AlltoallValue with rank 3's channel: %v", me, err)
		}
		var got int
		var scatter any
		if me == 0 {
			scatter = []int{1, 2} // two values for four ranks
		}
		if err := w.ScatterValue(scatter, &got, 0); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("rank %d: ScatterValue of too few values: %v", me, err)
		}
		var s string // an int does not decode into a string
		if err := w.ScatterValue([]int{5, 6, 7, 8}, &s, 0); !errors.Is(err, comm.ErrType) {
			return fmt.Errorf("rank %d: ScatterValue of ints into a string: %v", me, err)
		}
		return nil
	})
}

// IrecvValue decodes as the message is delivered: before or after the
// send, eager or rendezvous, on goroutine ranks and across processes.
func TestIrecvValue(t *testing.T) {
	fn := func(w *comm.Comm) error {
		if w.Rank() == 1 {
			for _, n := range []int{1, 200000} {
				if err := w.SendValue(recOf(1, n), 0, n); err != nil {
					return err
				}
			}
			return nil
		}
		for _, n := range []int{1, 200000} {
			var got rec
			r, err := w.IrecvValue(&got, 1, n)
			if err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil || !got.is(recOf(1, n)) {
				return fmt.Errorf("IrecvValue of a %d-byte name: %v", n, err)
			}
		}
		if _, err := w.IrecvValue(nil, 1, 0); !errors.Is(err, comm.ErrArg) {
			return fmt.Errorf("IrecvValue into nil: %v", err)
		}
		return nil
	}
	run(t, 2, fn)
	for r, err := range runProcs(t, 2, 1, fn) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
