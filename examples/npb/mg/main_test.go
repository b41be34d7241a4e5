package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/examples/npb/internal/npb"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestClassS(t *testing.T) {
	for _, np := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			var out strings.Builder
			if err := run(np, 'S', &out); err != nil {
				t.Fatal(err)
			}
			report := out.String()
			for _, want := range []string{
				" Size:   32x  32x  32  (class S)",
				fmt.Sprintf(" Total number of processes: %6d", np),
				" L2 Norm is  0.53077070057",
				fmt.Sprintf(" Total processes = %24d", np),
			} {
				if !strings.Contains(report, want) {
					t.Errorf("report lacks %q", want)
				}
			}
			if !strings.HasSuffix(report, "\n VERIFICATION SUCCESSFUL\n") {
				t.Errorf("not verified:\n%s", report)
			}
		})
	}
}

// TestDeadLevels runs an 8³ grid on 32 ranks (2×4×4), where every rank
// holds 4×2×2 points of the finest level, 2×1×1 of the next, and the
// coarsest level lives on some ranks only (NPB's dead levels, comm3_ex and
// the thin variant of interp). The residual must be the one rank's.
func TestDeadLevels(t *testing.T) {
	p := params{n: 8, nit: 4}
	norm := func(np int) float64 {
		t.Helper()
		var out strings.Builder
		err := mpgo.Run(np, func(world *comm.Comm) error {
			return bench(world, 'U', p, &out)
		})
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`L2 Norm is +(\S+)`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("%d ranks: no L2 norm in\n%s", np, out.String())
		}
		x, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	one, many := norm(1), norm(32)
	if one == 0 || math.Abs(many-one)/one > 1e-10 {
		t.Errorf("L2 norm on 32 ranks %v, on one rank %v", many, one)
	}
}

func TestBadArgs(t *testing.T) {
	tests := []struct {
		np    int
		class npb.Class
		want  string
	}{
		{3, 'S', "power of two"},
		{6, 'S', "power of two"},
		{0, 'S', ""},
		{1, 'X', "class X"},
	}
	for _, tt := range tests {
		var out strings.Builder
		err := run(tt.np, tt.class, &out)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%d, %v): error %v, want one mentioning %q", tt.np, tt.class, err, tt.want)
		}
		if out.Len() != 0 {
			t.Errorf("run(%d, %v) wrote %q", tt.np, tt.class, out.String())
		}
	}

	// 64 ranks on an 8³ grid: 8 points each, too few for zran3's ten.
	var out strings.Builder
	err := mpgo.Run(64, func(world *comm.Comm) error {
		return bench(world, 'U', params{n: 8, nit: 1}, &out)
	})
	if err == nil || !strings.Contains(err.Error(), "fewer than 10 points per rank") {
		t.Errorf("64 ranks on 8³: error %v, want one about too few points", err)
	}
}

func TestFortranE(t *testing.T) {
	for x, want := range map[float64]string{
		0.5307707005734e-04: "0.5307707005734E-04",
		1:                   "0.1000000000000E+01",
		-2.5e10:             "-0.2500000000000E+11",
		0:                   "0.0000000000000E+00",
	} {
		if got := fortranE(x); got != want {
			t.Errorf("fortranE(%v) = %q, want %q", x, got, want)
		}
	}
}
