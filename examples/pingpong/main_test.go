package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestPingpong(t *testing.T) {
	// 0: empty messages; 1<<17: past the eager limit (rendezvous).
	sizes := []int{0, 1, 8, 1024, 1 << 17}
	for _, np := range []int{2, 3} {
		for _, owned := range []bool{false, true} {
			t.Run(fmt.Sprintf("np=%d/owned=%v", np, owned), func(t *testing.T) {
				var out strings.Builder
				if err := run(np, sizes, 20, owned, &out); err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
				if len(lines) != 2+len(sizes) {
					t.Fatalf("got %d lines, want %d:\n%s", len(lines), 2+len(sizes), out.String())
				}
				if want := fmt.Sprintf("# pingpong: ranks 0 and 1 of %d, ", np); !strings.HasPrefix(lines[0], want) {
					t.Errorf("title %q, want it to start with %q", lines[0], want)
				}
				if got := strings.Fields(lines[1]); !slices.Equal(got, []string{"size(B)", "latency(µs)", "bandwidth(MB/s)"}) {
					t.Errorf("header %q", lines[1])
				}
				for i, line := range lines[2:] {
					f := strings.Fields(line)
					if len(f) != 3 {
						t.Errorf("row %q: want 3 columns", line)
						continue
					}
					if f[0] != strconv.Itoa(sizes[i]) {
						t.Errorf("row %q: size %s, want %d", line, f[0], sizes[i])
					}
					lat, err1 := strconv.ParseFloat(f[1], 64)
					bw, err2 := strconv.ParseFloat(f[2], 64)
					if err1 != nil || err2 != nil || lat <= 0 || bw < 0 {
						t.Errorf("row %q: want a positive latency and a bandwidth", line)
					}
				}
			})
		}
	}
}

func TestPingpongBadArgs(t *testing.T) {
	tests := []struct {
		name  string
		np    int
		sizes []int
		iters int
	}{
		{"one rank", 1, []int{1}, 1},
		{"negative size", 2, []int{1, -1}, 1},
		{"negative iters", 2, []int{1}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			if err := run(tt.np, tt.sizes, tt.iters, false, &out); err == nil {
				t.Errorf("run succeeded, want an error; output:\n%s", out.String())
			}
		})
	}
}

func TestParseSizes(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"1,8,1024", []int{1, 8, 1024}},
		{"0", []int{0}},
		{" 16 , 32", []int{16, 32}},
		{"", nil},
		{"1,,2", nil},
		{"-1", nil},
		{"1k", nil},
	}
	for _, tt := range tests {
		got, err := parseSizes(tt.in)
		if tt.want == nil {
			if err == nil {
				t.Errorf("parseSizes(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("parseSizes(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}
