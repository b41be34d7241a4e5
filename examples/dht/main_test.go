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

func TestDHT(t *testing.T) {
	tests := []struct{ np, keys, batch int }{
		{1, 100, 8},
		{2, 1000, 64},
		{4, 500, 1},
		{7, 300, 16},
		{3, 0, 4},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("np=%d/keys=%d/batch=%d", tt.np, tt.keys, tt.batch), func(t *testing.T) {
			var out strings.Builder
			if err := run(tt.np, tt.keys, tt.batch, &out); err != nil {
				t.Fatal(err)
			}
			entries := tt.np * tt.keys
			found, missing := tt.np*tt.keys, tt.np*tt.keys
			if entries == 0 {
				found = 0
			}
			want := fmt.Sprintf("dht: %d ranks, %d entries, %d lookups found, %d missing as they should ok\n", tt.np, entries, found, missing)
			if got := out.String(); got != want {
				t.Errorf("output %q, want %q", got, want)
			}
		})
	}
}

func TestDHTBadArgs(t *testing.T) {
	var out strings.Builder
	if err := run(2, -1, 1, &out); err == nil {
		t.Error("-keys -1 succeeded")
	}
	if err := run(2, 1, 0, &out); err == nil {
		t.Error("-batch 0 succeeded")
	}
	if out.Len() != 0 {
		t.Errorf("wrote %q", out.String())
	}
}
