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

func TestEPClassS(t *testing.T) {
	for _, np := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			var out strings.Builder
			res, err := run(np, 'S', &out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if !res.Verified || res.Procs != np || res.Mops <= 0 {
				t.Errorf("result %+v", res)
			}
			if !strings.HasSuffix(out.String(), "VERIFICATION SUCCESSFUL\n") {
				t.Errorf("report does not end in VERIFICATION SUCCESSFUL:\n%s", out.String())
			}
		})
	}
}

// TestEPOddRanks: EP takes any number of ranks; with 3 the 256 batches of
// class S split unevenly (86, 85, 85).
func TestEPOddRanks(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	var out strings.Builder
	if res, err := run(3, 'S', &out); err != nil || !res.Verified {
		t.Fatalf("verified=%v err=%v\n%s", res.Verified, err, out.String())
	}
}

func TestEPBadRanks(t *testing.T) {
	for _, np := range []int{0, 257} { // class S has 256 batches
		var out strings.Builder
		if _, err := run(np, 'S', &out); err == nil {
			t.Errorf("np=%d: no error", np)
		} else if np > 0 && !strings.Contains(err.Error(), "too many ranks") {
			t.Errorf("np=%d: %v", np, err)
		}
		if out.Len() != 0 {
			t.Errorf("np=%d: wrote %q", np, out.String())
		}
	}
}
