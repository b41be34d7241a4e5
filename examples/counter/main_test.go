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

func TestCounter(t *testing.T) {
	for _, tt := range []struct{ np, items int }{{1, 100}, {2, 1000}, {5, 3000}, {16, 5000}, {3, 0}, {8, 3}} {
		t.Run(fmt.Sprintf("np=%d/items=%d", tt.np, tt.items), func(t *testing.T) {
			var out strings.Builder
			if err := run(tt.np, tt.items, &out); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); !strings.HasPrefix(got, fmt.Sprintf("counter: %d items on %d ranks, total=", tt.items, tt.np)) || !strings.HasSuffix(got, " ok\n") {
				t.Errorf("output %q", got)
			}
		})
	}
}

func TestCounterBadArgs(t *testing.T) {
	var out strings.Builder
	if err := run(2, -1, &out); err == nil {
		t.Error("run with -1 items succeeded, want an error")
	}
}
