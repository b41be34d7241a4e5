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

func TestCGClassS(t *testing.T) {
	for _, np := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			var out strings.Builder
			res, err := run(np, 'S', &out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if !res.Verified || res.Procs != np || res.Iterations != 15 {
				t.Errorf("result %+v", res)
			}
			if !strings.HasSuffix(out.String(), "VERIFICATION SUCCESSFUL\n") {
				t.Errorf("report does not end in VERIFICATION SUCCESSFUL:\n%s", out.String())
			}
		})
	}
}

// TestCGGrid runs other process grids: 8 ranks make a non-square 4×2
// grid (each row block's columns split in two between neighbours); 128
// make a 16×8 grid where na = 1400 does not divide by the 16 column
// blocks (NPB's uneven layout).
func TestCGGrid(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	nps := []int{8, 128}
	if raceEnabled {
		nps = nps[:1] // 128 ranks take ~20 s under the race detector
	}
	for _, np := range nps {
		var out strings.Builder
		if res, err := run(np, 'S', &out); err != nil || !res.Verified {
			t.Errorf("np=%d: verified=%v err=%v\n%s", np, res.Verified, err, out.String())
		}
	}
}

// TestSubmatrixUneven checks the block layout where na does not divide
// by the grid: the blocks must tile 1 … na exactly, in rows and columns.
func TestSubmatrixUneven(t *testing.T) {
	for _, tc := range []struct{ na, np int }{{1400, 4}, {1400, 8}, {1401, 4}, {1401, 8}, {7001, 32}} {
		t.Run(fmt.Sprintf("na=%d/np=%d", tc.na, tc.np), func(t *testing.T) {
			var cols, rows []int
			for me := range tc.np {
				s := &solver{me: me, na: tc.na}
				l := 0
				for 1<<(l+1) <= tc.np {
					l++
				}
				s.npcols, s.nprows = 1<<(l-l/2), 1<<(l/2)
				s.setupSubmatrixInfo()
				if me < s.npcols { // the first process row: all column blocks
					cols = append(cols, s.firstcol, s.lastcol)
				}
				if me%s.npcols == 0 { // the first process column: all row blocks
					rows = append(rows, s.firstrow, s.lastrow)
				}
			}
			for name, b := range map[string][]int{"cols": cols, "rows": rows} {
				next := 1
				for i := 0; i < len(b); i += 2 {
					if b[i] != next || b[i+1] < b[i] {
						t.Fatalf("%s blocks %v do not tile 1…%d", name, b, tc.na)
					}
					next = b[i+1] + 1
				}
				if next != tc.na+1 {
					t.Fatalf("%s blocks %v do not tile 1…%d", name, b, tc.na)
				}
			}
		})
	}
}

func TestCGBadRanks(t *testing.T) {
	for _, np := range []int{3, 6, 12} {
		var out strings.Builder
		_, err := run(np, 'S', &out)
		if err == nil || !strings.Contains(err.Error(), "power of two") {
			t.Errorf("np=%d: err=%v, want a power-of-two error", np, err)
		}
		if out.Len() != 0 {
			t.Errorf("np=%d: wrote %q", np, out.String())
		}
	}
}
