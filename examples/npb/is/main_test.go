package main

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestISClassS(t *testing.T) {
	for _, np := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			var out strings.Builder
			res, err := run(np, 'S', &out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if !res.Verified || res.Procs != np || res.Iterations != maxIterations {
				t.Errorf("result %+v", res)
			}
			if !strings.HasSuffix(out.String(), "VERIFICATION SUCCESSFUL\n") {
				t.Errorf("report does not end in VERIFICATION SUCCESSFUL:\n%s", out.String())
			}
		})
	}
}

// TestISManyRanks: with 32 ranks of 2048 keys each, the bucket split and
// the Alltoallv are at their most uneven for class S.
func TestISManyRanks(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	var out strings.Builder
	if res, err := run(32, 'S', &out); err != nil || !res.Verified {
		t.Fatalf("verified=%v err=%v\n%s", res.Verified, err, out.String())
	}
}

func TestISBadRanks(t *testing.T) {
	for _, np := range []int{3, 6, 256} { // not powers of two; over class S's 128
		var out strings.Builder
		_, err := run(np, 'S', &out)
		if err == nil || !strings.Contains(err.Error(), "power of two") {
			t.Errorf("np=%d: err=%v, want a power-of-two error", np, err)
		}
		if out.Len() != 0 {
			t.Errorf("np=%d: wrote %q", np, out.String())
		}
	}
	if _, err := run(2, 'D', new(strings.Builder)); err == nil {
		t.Error("class D: no error")
	}
}
