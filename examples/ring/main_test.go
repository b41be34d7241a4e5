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

func TestRing(t *testing.T) {
	tests := []struct{ np, length, laps int }{
		{1, 1, 100},
		{2, 1, 100},
		{7, 1, 100},
		{4, 3, 0},
		{1, 1 << 14, 3}, // 128 KiB: rendezvous, rank 0 its own neighbour
		{3, 1 << 14, 5},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("np=%d/len=%d/laps=%d", tt.np, tt.length, tt.laps), func(t *testing.T) {
			var out strings.Builder
			if err := run(tt.np, tt.length, tt.laps, &out); err != nil {
				t.Fatal(err)
			}
			v := tt.laps * tt.np * (tt.np - 1) / 2
			want := fmt.Sprintf("ring: %d ranks, %d laps, token=%d (expected %d) ok\n", tt.np, tt.laps, v, v)
			if got := out.String(); got != want {
				t.Errorf("output %q, want %q", got, want)
			}
		})
	}
}

func TestRingBadArgs(t *testing.T) {
	tests := []struct{ np, length, laps int }{
		{0, 1, 1},
		{2, 0, 1},
		{2, 1, -1},
	}
	for _, tt := range tests {
		var out strings.Builder
		if err := run(tt.np, tt.length, tt.laps, &out); err == nil {
			t.Errorf("run(%d, %d, %d) succeeded, want an error", tt.np, tt.length, tt.laps)
		}
		if out.Len() != 0 {
			t.Errorf("run(%d, %d, %d) wrote %q", tt.np, tt.length, tt.laps, out.String())
		}
	}
}
