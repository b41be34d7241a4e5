package comm_test

import (
	"encoding/gob"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/mpgo/mpgo/comm"
)

// record has strings, a slice and a map: it travels as a gob stream whose
// type descriptions both sides cache.
type record struct {
	Name  string
	Vals  []float64
	Attrs map[string]int
	Next  *record
}

func (r record) equal(o record) bool {
	return r.Name == o.Name && slices.Equal(r.Vals, o.Vals) && maps.Equal(r.Attrs, o.Attrs) &&
		(r.Next == nil) == (o.Next == nil) && (r.Next == nil || r.Next.equal(*o.Next))
}

type shape interface{ area() float64 }

type square struct{ Side float64 }

func (s square) area() float64 { return s.Side * s.Side }

// holder holds an interface: gob describes its concrete types as it meets
// them, so it goes by a fresh stream each time.
type holder struct {
	Name  string
	Shape shape
}

// Every message decodes alike, the first (a fresh decoder) and the later
// ones (a decoder that has read the type descriptions), into the same type
// and into any gob converts to; a failed decode leaves the next one
// unharmed.
func TestValueStream(t *testing.T) {
	gob.Register(square{})
	for i := range 5 {
		want := record{Name: fmt.Sprint("r", i), Vals: []float64{float64(i), 2}, Attrs: map[string]int{"i": i},
			Next: &record{Name: "next"}}
		data, err := comm.EncodeValue(want)
		if err != nil {
			t.Fatal(err)
		}
		var got record
		if err := comm.DecodeValue(data, &got); err != nil || !got.equal(want) {
			t.Fatalf("message %d: %+v, %v; want %+v", i, got, err, want)
		}
		var name struct{ Name string }
		if err := comm.DecodeValue(data, &name); err != nil || name.Name != want.Name {
			t.Errorf("message %d into a struct of its name: %+v, %v", i, name, err)
		}
		var wrong []string
		if err := comm.DecodeValue(data, &wrong); !errors.Is(err, comm.ErrType) {
			t.Errorf("message %d into a []string: %v, want ErrType", i, err)
		}
		p := &want
		if data, err = comm.EncodeValue(&p); err != nil {
			t.Fatal(err)
		}
		var gp *record
		if err := comm.DecodeValue(data, &gp); err != nil || gp == nil || !gp.equal(want) {
			t.Errorf("message %d through pointers: %v, %v", i, gp, err)
		}
		h := holder{Name: "h", Shape: square{float64(i)}}
		if data, err = comm.EncodeValue(h); err != nil {
			t.Fatal(err)
		}
		var gh holder
		if err := comm.DecodeValue(data, &gh); err != nil || gh.Name != "h" || gh.Shape.area() != float64(i*i) {
			t.Errorf("message %d with an interface: %+v, %v", i, gh, err)
		}
		for _, s := range []string{"", "hello"} {
			if data, err = comm.EncodeValue(s); err != nil {
				t.Fatal(err)
			}
			var gs string
			if err := comm.DecodeValue(data, &gs); err != nil || gs != s {
				t.Errorf("string %q: %q, %v", s, gs, err)
			}
		}
	}
}

// Several ranks send one rank values of a cached type at once, many each:
// every one arrives whole (the race detector watches the caches).
func TestValueStreamRanks(t *testing.T) {
	const n, each = 4, 50
	run(t, n, func(w *comm.Comm) error {
		if w.Rank() != 0 {
			for i := range each {
				v := record{Name: fmt.Sprint(w.Rank()), Vals: []float64{float64(i)}, Attrs: map[string]int{"r": w.Rank()}}
				if err := w.SendValue(v, 0, 0); err != nil {
					return err
				}
			}
			return nil
		}
		next := make([]int, n)
		for range (n - 1) * each {
			var got record
			st, err := w.RecvValue(&got, comm.AnySource, 0)
			if err != nil {
				return err
			}
			want := record{Name: fmt.Sprint(st.Source), Vals: []float64{float64(next[st.Source])}, Attrs: map[string]int{"r": st.Source}}
			if !got.equal(want) {
				return fmt.Errorf("from %d: %+v, want %+v", st.Source, got, want)
			}
			next[st.Source]++
		}
		return nil
	})
}
