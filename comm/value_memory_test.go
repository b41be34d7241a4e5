package comm_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/mpgo/mpgo/comm"
)

// pair and point share no layout: a point received into a pair goes
// through gob's conversion (fields by name).
type point struct {
	X, Y, Z float64
	N       int32
}

type xOnly struct{ X float64 }

// hidden has an unexported field: gob leaves it alone, so must SendValue.
type hidden struct {
	A int
	b int
}

// plusOne marshals itself (gob calls its methods): SendValue must too.
type plusOne struct{ V int64 }

func (p plusOne) GobEncode() ([]byte, error) { return []byte{byte(p.V + 1)}, nil }
func (p *plusOne) GobDecode(b []byte) error {
	p.V = int64(b[0]) + 100
	return nil
}

// A value of a fixed-size type arrives as it was sent, into the same
// type, into a pointer (allocated), and into every other type gob
// converts it to; what gob refuses still fails with ErrType.
func TestValueFixedSize(t *testing.T) {
	sent := point{1.5, -2, 3, 7}
	data, err := comm.EncodeValue(sent)
	if err != nil {
		t.Fatal(err)
	}
	var same point
	if err := comm.DecodeValue(data, &same); err != nil || same != sent {
		t.Errorf("into the same type: %+v, %v", same, err)
	}
	var p *point
	if err := comm.DecodeValue(data, &p); err != nil || p == nil || *p != sent {
		t.Errorf("into a nil pointer: %v, %v", p, err)
	}
	var x xOnly
	if err := comm.DecodeValue(data, &x); err != nil || x.X != 1.5 {
		t.Errorf("into a struct of one of its fields: %+v, %v", x, err)
	}
	var m map[string]float64
	if err := comm.DecodeValue(data, &m); !errors.Is(err, comm.ErrType) {
		t.Errorf("into a map: %v, %v; want ErrType", m, err)
	}

	data, err = comm.EncodeValue(300)
	if err != nil {
		t.Fatal(err)
	}
	var i64 int64
	if err := comm.DecodeValue(data, &i64); err != nil || i64 != 300 {
		t.Errorf("int into int64: %d, %v", i64, err)
	}
	var i8 int8
	if err := comm.DecodeValue(data, &i8); !errors.Is(err, comm.ErrType) {
		t.Errorf("300 into int8: %d, %v; want ErrType (overflow)", i8, err)
	}
	var f float64
	if err := comm.DecodeValue(data, &f); !errors.Is(err, comm.ErrType) {
		t.Errorf("int into float64: %v, %v; want ErrType, as gob", f, err)
	}

	// Through a pointer, as BcastValue's root encodes *ptr.
	data, err = comm.EncodeValue(&sent)
	if err != nil {
		t.Fatal(err)
	}
	same = point{}
	if err := comm.DecodeValue(data, &same); err != nil || same != sent {
		t.Errorf("sent through a pointer: %+v, %v", same, err)
	}
}

// Types gob treats specially keep gob's treatment.
func TestValueGobRules(t *testing.T) {
	data, err := comm.EncodeValue(hidden{A: 1, b: 2})
	if err != nil {
		t.Fatal(err)
	}
	got := hidden{b: 9}
	if err := comm.DecodeValue(data, &got); err != nil || got.A != 1 || got.b != 9 {
		t.Errorf("unexported field: %+v, %v; want A 1 and b left 9", got, err)
	}
	data, err = comm.EncodeValue(plusOne{V: 1})
	if err != nil {
		t.Fatal(err)
	}
	var po plusOne
	if err := comm.DecodeValue(data, &po); err != nil || po.V != 102 {
		t.Errorf("GobEncoder/GobDecoder: %+v, %v; want their V 102", po, err)
	}
	data, err = comm.EncodeValue(struct{}{}) // size 0: by gob
	if err != nil {
		t.Fatal(err)
	}
	var empty struct{}
	if err := comm.DecodeValue(data, &empty); err != nil {
		t.Errorf("an empty struct: %v", err)
	}
}

// Between ranks: SendValue, IsendValue/IrecvValue and BcastValue of a
// fixed-size value, and Count is the size a probe sees.
func TestValueFixedSizeRanks(t *testing.T) {
	run(t, 3, func(w *comm.Comm) error {
		want := point{float64(w.Rank()), 2, 3, int32(w.Rank())}
		next, prev := (w.Rank()+1)%3, (w.Rank()+2)%3
		r, err := w.IsendValue(want, next, 4)
		if err != nil {
			return err
		}
		pst, err := w.Probe(prev, 4)
		if err != nil {
			return err
		}
		var got point
		st, err := w.RecvValue(&got, prev, 4)
		if err != nil {
			return err
		}
		if exp := (point{float64(prev), 2, 3, int32(prev)}); got != exp || st.Count != pst.Count {
			return fmt.Errorf("RecvValue: %+v (count %d), want %+v (count %d)", got, st.Count, exp, pst.Count)
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		var b point
		if w.Rank() == 1 {
			b = point{9, 8, 7, 6}
		}
		if err := w.BcastValue(&b, 1); err != nil {
			return err
		}
		if b != (point{9, 8, 7, 6}) {
			return fmt.Errorf("BcastValue: %+v", b)
		}
		return nil
	})
}

// A corrupt value message (memory or stream) fails with ErrType, never a
// panic.
func FuzzDecodeValue(f *testing.F) {
	for _, v := range []any{point{1, 2, 3, 4}, [3]int16{1, 2, 3}, true, 1.5, struct{ A [2]struct{ B uint8 } }{},
		"a string", record{Name: "r", Vals: []float64{1}}, map[string]int{"a": 1}} {
		data, err := comm.EncodeValue(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, ptr := range []any{new(point), new(xOnly), new(int), new(*point), new([3]int16), new(string), new(record)} {
			err := comm.DecodeValue(data, ptr)
			if err != nil && !errors.Is(err, comm.ErrType) {
				t.Fatalf("into %v: %v, want ErrType", reflect.TypeOf(ptr).Elem(), err)
			}
		}
	})
}
