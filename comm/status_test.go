package comm_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// Status.Count is in units of the type the call names (MPI_Get_count with
// that call's datatype): elements for a typed receive and for every call
// of package typed, bytes for the probes of comm (which name no type) and
// for values (the size of the encoding, as a probe of the message says).
func TestStatusCountUnits(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		c := typed.Of[float64](w)
		if w.Rank() == 1 {
			for tag := range 6 {
				if err := c.Send([]float64{1, 2, 3}, 0, tag); err != nil {
					return err
				}
			}
			return w.SendValue(struct{ A, B string }{"x", "y"}, 0, 9)
		}
		check := func(what string, st comm.Status, err error, want int) error {
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			if st.Count != want || st.Source != 1 {
				return fmt.Errorf("%s: status %v, want count %d from rank 1", what, st, want)
			}
			return nil
		}
		buf := make([]byte, 64)
		fbuf := make([]float64, 8)
		st, err := w.Probe(1, 0)
		if err := check("comm Probe of 3 float64s", st, err, 24); err != nil {
			return err
		}
		st, ok, err := w.Iprobe(1, 0)
		if err := check("comm Iprobe of 3 float64s", st, err, 24); err != nil || !ok {
			return fmt.Errorf("%v (found %v)", err, ok)
		}
		st, err = c.Probe(1, 0)
		if err := check("typed Probe", st, err, 3); err != nil {
			return err
		}
		st, err = w.Recv(buf, comm.Float64, 1, 0)
		if err := check("comm Recv as Float64", st, err, 3); err != nil {
			return err
		}
		st, err = w.Recv(buf, comm.Byte, 1, 1)
		if err := check("comm Recv as Byte", st, err, 24); err != nil {
			return err
		}
		st, err = c.Recv(fbuf, 1, 2)
		if err := check("typed Recv", st, err, 3); err != nil {
			return err
		}
		m, st, err := w.Mprobe(1, 3)
		if err := check("comm Mprobe", st, err, 24); err != nil {
			return err
		}
		st, err = w.Mrecv(m, buf, comm.Float64)
		if err := check("comm Mrecv as Float64", st, err, 3); err != nil {
			return err
		}
		m, st, err = c.Mprobe(1, 4)
		if err := check("typed Mprobe", st, err, 3); err != nil {
			return err
		}
		st, err = c.Mrecv(m, fbuf)
		if err := check("typed Mrecv", st, err, 3); err != nil {
			return err
		}
		// Rank 1 may not have sent tag 5 yet: Improbe until it finds it.
		for ok = false; !ok && err == nil; {
			if m, st, ok, err = c.Improbe(1, 5); !ok {
				runtime.Gosched()
			}
		}
		if err := check("typed Improbe", st, err, 3); err != nil {
			return err
		}
		if _, err := c.Mrecv(m, fbuf); err != nil {
			return err
		}
		pst, err := w.Probe(1, 9)
		if err != nil {
			return err
		}
		if pst.Count <= 0 {
			return fmt.Errorf("probe of a value: count %d, want its encoded size", pst.Count)
		}
		var v struct{ A, B string }
		st, err = w.RecvValue(&v, 1, 9)
		if err := check("RecvValue", st, err, pst.Count); err != nil {
			return err
		}
		if v.A != "x" || v.B != "y" {
			return fmt.Errorf("RecvValue: %+v", v)
		}
		return nil
	})
}
