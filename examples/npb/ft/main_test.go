package main

import (
	"fmt"
	"math/cmplx"
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
	for _, tt := range []struct {
		np     int
		layout string
	}{{1, "0D"}, {2, "1D"}, {4, "1D"}} {
		t.Run(fmt.Sprintf("np=%d", tt.np), func(t *testing.T) {
			var out strings.Builder
			if err := run(tt.np, 'S', &out); err != nil {
				t.Fatal(err)
			}
			report := out.String()
			for _, want := range []string{
				" Size                :   64x  64x  64  (class S)",
				" Layout type         :             " + tt.layout,
				" T =    6     Checksum =    5.54268341190",
				" Result verification successful",
				fmt.Sprintf(" Total processes = %24d", tt.np),
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

// checksums runs problem p on np ranks and returns the checksums printed.
func checksums(t *testing.T, np int, p params) []complex128 {
	t.Helper()
	var out strings.Builder
	err := mpgo.Run(np, func(world *comm.Comm) error {
		return bench(world, 'U', p, &out)
	})
	if err != nil {
		t.Fatal(err)
	}
	var sums []complex128
	re := regexp.MustCompile(` T = +\d+ +Checksum = +(\S+) +(\S+)`)
	for _, m := range re.FindAllStringSubmatch(out.String(), -1) {
		re, err1 := strconv.ParseFloat(m[1], 64)
		im, err2 := strconv.ParseFloat(m[2], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("checksum %q %q", m[1], m[2])
		}
		sums = append(sums, complex(re, im))
	}
	if len(sums) != p.niter {
		t.Fatalf("%d ranks: %d checksums, want %d:\n%s", np, len(sums), p.niter, out.String())
	}
	if !strings.Contains(out.String(), "VERIFICATION UNSUCCESSFUL") {
		t.Errorf("%d ranks: a problem without reference checksums verified", np)
	}
	return sums
}

// TestLayouts checks that the 1-D (slabs) and 2-D (pencils: more ranks
// than z-planes, two transposes in sub-communicators) layouts compute what
// the 0-D one does, on a grid small enough for many ranks.
func TestLayouts(t *testing.T) {
	p := params{nx: 16, ny: 8, nz: 8, niter: 3}
	want := checksums(t, 1, p)
	for _, np := range []int{2, 8, 16, 32} {
		got := checksums(t, np, p)
		for i := range want {
			if e := cmplx.Abs((got[i] - want[i]) / want[i]); e > 1e-12 {
				t.Errorf("%d ranks, step %d: checksum %v, one rank %v", np, i+1, got[i], want[i])
			}
		}
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

	// 32 ranks on a 4³ grid: 4×8, and 8 does not divide y.
	var out strings.Builder
	err := mpgo.Run(32, func(world *comm.Comm) error {
		return bench(world, 'U', params{nx: 4, ny: 4, nz: 4, niter: 1}, &out)
	})
	if err == nil || !strings.Contains(err.Error(), "do not divide") {
		t.Errorf("32 ranks on 4³: error %v, want one saying the ranks do not divide the grid", err)
	}
}
