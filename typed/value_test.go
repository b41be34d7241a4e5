package typed_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// RecvValue returns a fresh T; AllreduceValue and ReduceValue fold in
// rank order with any function (here string concatenation, which does not
// commute).
func TestGenericValues(t *testing.T) {
	err := mpgo.Run(5, func(w *comm.Comm) error {
		me := w.Rank()
		s := string(rune('a' + me))
		all, err := typed.AllreduceValue(w, s, func(a, b string) string { return a + b })
		if err != nil || all != "abcde" {
			return fmt.Errorf("AllreduceValue = %q, %v", all, err)
		}
		red, err := typed.ReduceValue(w, []int{me}, func(a, b []int) []int { return append(a, b...) }, 3)
		if err != nil || me == 3 && fmt.Sprint(red) != "[0 1 2 3 4]" || me != 3 && red != nil {
			return fmt.Errorf("ReduceValue = %v, %v", red, err)
		}
		if me == 0 {
			type point struct{ X, Y float64 }
			p, st, err := typed.RecvValue[point](w, 1, 0)
			if err != nil || p != (point{1, 2}) || st.Source != 1 {
				return fmt.Errorf("RecvValue = %+v %+v %v", p, st, err)
			}
			if _, _, err := typed.RecvValue[string](w, 1, 1); !errors.Is(err, comm.ErrType) {
				return fmt.Errorf("RecvValue of a number as a string: %v", err)
			}
		}
		if me == 1 {
			if err := w.SendValue(struct{ X, Y float64 }{1, 2}, 0, 0); err != nil {
				return err
			}
			return w.SendValue(42, 0, 1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
