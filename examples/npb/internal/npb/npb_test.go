package npb

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// randlcFloat is NPB's randlc as written in Fortran/C, in float64
// arithmetic split into 23-bit halves; Randlc must agree with it exactly.
func randlcFloat(x *float64, a float64) float64 {
	const (
		r23 = 1.0 / (1 << 23)
		t23 = 1 << 23
		r46 = r23 * r23
		t46 = float64(t23) * t23
	)
	t1 := r23 * a
	a1 := float64(int64(t1))
	a2 := a - t23*a1
	t1 = r23 * *x
	x1 := float64(int64(t1))
	x2 := *x - t23*x1
	t1 = float64(a1*x2) + float64(a2*x1)
	t2 := float64(int64(r23 * t1))
	z := t1 - t23*t2
	t3 := float64(t23*z) + float64(a2*x2)
	t4 := float64(int64(r46 * t3))
	*x = t3 - t46*t4
	return r46 * *x
}

func TestRandlcMatchesNPB(t *testing.T) {
	x, y := 314159265.0, 314159265.0
	const a = 1220703125.0
	for i := range 100000 {
		if got, want := Randlc(&x, a), randlcFloat(&y, a); got != want || x != y {
			t.Fatalf("step %d: Randlc %v (x=%v), NPB %v (x=%v)", i, got, x, want, y)
		}
	}
}

func TestVranlcAndPow46(t *testing.T) {
	const a = 1220703125.0
	x := 271828183.0
	ys := make([]float64, 1000)
	Vranlc(&x, a, ys)
	z := 271828183.0
	for i, y := range ys {
		if r := Randlc(&z, a); r != y {
			t.Fatalf("value %d: Vranlc %v, Randlc %v", i, y, r)
		}
	}
	if x != z {
		t.Fatalf("seed after Vranlc %v, after Randlc %v", x, z)
	}
	// Jumping 1000 steps ahead: x_1000 = a^1000 · x_0 mod 2^46.
	j := 271828183.0
	Randlc(&j, Pow46(a, 1000))
	if j != x {
		t.Fatalf("jump: %v, stepping: %v", j, x)
	}
}

func TestParseClass(t *testing.T) {
	for _, s := range []string{"S", "w", "A"} {
		if _, err := ParseClass(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "X", "SW"} {
		if _, err := ParseClass(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestPrint(t *testing.T) {
	var b strings.Builder
	Result{Name: "EP", Class: 'S', Size: "33554432", Iterations: 0, Time: time.Second,
		Procs: 4, Mops: 100, OpType: "Random numbers generated", Verified: true}.Print(&b)
	for _, want := range []string{" EP Benchmark Completed.", " Class           =                        S",
		" Mop/s/process   =                    25.00", "VERIFICATION SUCCESSFUL"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
