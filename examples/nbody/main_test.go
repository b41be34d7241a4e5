package main

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// small is the test problem: enough steps for particles to cross domain
// boundaries.
var small = config{n: 200, steps: 40, dt: 0.01, eps: 0.05, tol: 1e-4, seed: 7}

// TestNbody runs the small problem on 1 to 4 ranks, checks conservation on
// each, and that the final positions, energy and momentum agree with the
// one-rank run.
func TestNbody(t *testing.T) {
	var ref result
	for np := 1; np <= 4; np++ {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			var out strings.Builder
			res, err := run(np, small, &out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if !res.ok || !strings.HasSuffix(out.String(), "nbody: ok\n") {
				t.Fatalf("checks failed:\n%s", out.String())
			}
			if res.count != small.n || len(res.pos) != 3*small.n {
				t.Fatalf("%d particles, %d coordinates", res.count, len(res.pos))
			}
			if res.drift == 0 || res.drift > small.tol {
				t.Errorf("energy drift %g", res.drift)
			}
			if np > 1 && res.migrated == 0 {
				t.Errorf("no particle migrated on %d ranks", np)
			}
			if np == 1 {
				ref = res
				return
			}
			if ref.pos == nil {
				t.Skip("no one-rank result to compare with")
			}
			for i, x := range res.pos {
				if math.IsNaN(x) || math.Abs(x-ref.pos[i]) > 1e-12 {
					t.Fatalf("coordinate %d of particle %d: %v on %d ranks, %v on 1", i%3, i/3, x, np, ref.pos[i])
				}
			}
			if d := math.Abs(res.e - ref.e); d > 1e-12*math.Abs(ref.e) {
				t.Errorf("final energy %v on %d ranks, %v on 1", res.e, np, ref.e)
			}
			for d := range 3 {
				if math.Abs(res.p[d]-ref.p[d]) > 1e-15 {
					t.Errorf("final momentum %v on %d ranks, %v on 1", res.p, np, ref.p)
				}
			}
		})
	}
}

// TestNbodyManyRanks runs with more ranks than some domains have
// particles to spare, and with fewer particles than ranks.
func TestNbodyManyRanks(t *testing.T) {
	for _, tt := range []struct{ np, n int }{{7, 50}, {5, 3}} {
		cfg := small
		cfg.n, cfg.steps = tt.n, 10
		cfg.tol = 1e-2 // a handful of particles: close encounters
		var out strings.Builder
		res, err := run(tt.np, cfg, &out)
		if err != nil {
			t.Fatalf("np=%d n=%d: %v\n%s", tt.np, tt.n, err, out.String())
		}
		if res.count != tt.n {
			t.Errorf("np=%d n=%d: %d particles at the end", tt.np, tt.n, res.count)
		}
	}
}

func TestNbodyBadArgs(t *testing.T) {
	bad := []struct {
		np  int
		cfg config
	}{
		{0, small},
		{2, config{n: 1, steps: 1, dt: 0.01, eps: 0.05}},
		{2, config{n: 10, steps: -1, dt: 0.01, eps: 0.05}},
		{2, config{n: 10, steps: 1, dt: 0, eps: 0.05}},
		{2, config{n: 10, steps: 1, dt: math.NaN(), eps: 0.05}},
		{2, config{n: 10, steps: 1, dt: 0.01, eps: 0}},
		{2, config{n: 10, steps: 1, dt: 0.01, eps: 0.05, tol: -1}},
	}
	for _, tt := range bad {
		var out strings.Builder
		if _, err := run(tt.np, tt.cfg, &out); err == nil {
			t.Errorf("run(%d, %+v) succeeded, want an error", tt.np, tt.cfg)
		}
		if out.Len() != 0 {
			t.Errorf("run(%d, %+v) wrote %q", tt.np, tt.cfg, out.String())
		}
	}
}

// TestNbodyFails checks that a drift above the tolerance is reported as
// FAILED and returned as an error.
func TestNbodyFails(t *testing.T) {
	cfg := small
	cfg.dt, cfg.tol = 0.2, 1e-9
	var out strings.Builder
	res, err := run(2, cfg, &out)
	if err == nil || res.ok || !strings.Contains(out.String(), "FAILED") {
		t.Errorf("err %v, output:\n%s", err, out.String())
	}
}

// TestHilbertKey checks the curve on small cubes: every cell gets its own
// key, and cells with consecutive keys are face neighbours.
func TestHilbertKey(t *testing.T) {
	for bits := 1; bits <= 4; bits++ {
		side := 1 << bits
		cells := make([][3]int, side*side*side)
		seen := make([]bool, len(cells))
		for x := range side {
			for y := range side {
				for z := range side {
					k := hilbertKey(uint32(x), uint32(y), uint32(z), bits)
					if k >= uint64(len(cells)) || seen[k] {
						t.Fatalf("bits=%d: key %d of (%d,%d,%d) out of range or repeated", bits, k, x, y, z)
					}
					seen[k], cells[k] = true, [3]int{x, y, z}
				}
			}
		}
		for k := 1; k < len(cells); k++ {
			a, b := cells[k-1], cells[k]
			if d := abs(a[0]-b[0]) + abs(a[1]-b[1]) + abs(a[2]-b[2]); d != 1 {
				t.Fatalf("bits=%d: keys %d and %d at %v and %v", bits, k-1, k, a, b)
			}
		}
	}
	if k := hilbertKey(1<<keyBits-1, 1<<keyBits-1, 1<<keyBits-1, keyBits); k >= maxKey {
		t.Errorf("key %d at the far corner, want below %d", k, maxKey)
	}
}

func abs(x int) int { return max(x, -x) }

// TestStepAllocs checks that the simulation's own work in a step (kick,
// drift, keys and sorting, packing, direct summation) allocates nothing
// once the buffers have grown, and logs what a whole step allocates on 1
// and 2 ranks: that is mpgo's collectives (a request, its Done channel,
// the reduction's closure per call).
func TestStepAllocs(t *testing.T) {
	s := &sim{n: small.n, eps: small.eps, p: 1, parts: plummer(small.n, 1), cellsPerUnitLength: 1 << 18}
	for _, p := range s.parts {
		s.all = append(s.all, p.pos[0], p.pos[1], p.pos[2], p.mass)
	}
	local := testing.AllocsPerRun(20, func() {
		s.kick(small.dt / 2)
		s.drift(small.dt)
		s.setKeys()
		s.countBelow(1 << 40)
		s.accelerations()
		s.kick(small.dt / 2)
	})
	if local != 0 {
		t.Errorf("the local work of a step allocates %v times, want 0", local)
	}
	for _, np := range []int{1, 2} {
		var allocs float64
		err := mpgo.Run(np, func(w *comm.Comm) error {
			s := newSim(w, small)
			if err := s.decompose(); err != nil {
				return err
			}
			if err := s.forces(); err != nil {
				return err
			}
			for range 5 { // grow the buffers
				if err := s.step(small.dt); err != nil {
					return err
				}
			}
			var err error
			a := testing.AllocsPerRun(20, func() {
				if e := s.step(small.dt); e != nil {
					err = e
				}
			})
			if w.Rank() == 0 {
				allocs = a
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d ranks: %v allocations per step, all ranks together, all in mpgo's collectives", np, allocs)
	}
}

// BenchmarkAccelerations times the direct summation alone, one rank
// holding every particle.
func BenchmarkAccelerations(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := &sim{n: n, eps: small.eps, parts: plummer(n, 1)}
			for _, p := range s.parts {
				s.all = append(s.all, p.pos[0], p.pos[1], p.pos[2], p.mass)
			}
			for b.Loop() {
				s.accelerations()
			}
			b.ReportMetric(float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minteractions/s")
		})
	}
}
