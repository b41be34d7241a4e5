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

func TestHalo(t *testing.T) {
	for _, tt := range []struct{ np, n, iters int }{{1, 8, 10}, {2, 9, 20}, {4, 16, 30}, {6, 13, 25}, {9, 20, 10}, {16, 32, 15}, {4, 5, 0}} {
		t.Run(fmt.Sprintf("np=%d/n=%d/iters=%d", tt.np, tt.n, tt.iters), func(t *testing.T) {
			var out strings.Builder
			if err := run(tt.np, tt.n, tt.iters, &out); err != nil {
				t.Fatal(err)
			}
			px, py := procGrid(tt.np)
			want := fmt.Sprintf("halo: %dx%d grid on %dx%d ranks, %d iterations: every point equals the sequential solver's ok", tt.n, tt.n, px, py, tt.iters)
			if got := out.String(); !strings.HasPrefix(got, want) {
				t.Errorf("output %q, want it to start with %q", got, want)
			}
		})
	}
}

func TestHaloBadArgs(t *testing.T) {
	for _, tt := range []struct{ np, n, iters int }{{4, 1, 10}, {2, 8, -1}} {
		var out strings.Builder
		if err := run(tt.np, tt.n, tt.iters, &out); err == nil {
			t.Errorf("run(%d, %d, %d) succeeded, want an error", tt.np, tt.n, tt.iters)
		}
	}
}
