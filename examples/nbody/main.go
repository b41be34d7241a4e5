// Nbody is a gravitational N-body simulation in the shape of Gadget-2
// (Springel 2005), on mpgo: particles in an open 3-D box, a domain
// decomposition along the Peano–Hilbert curve recomputed every step as the
// particles move, particles migrating between ranks when they leave their
// rank's domain, forces by direct summation with Plummer softening, and
// kick-drift-kick leapfrog integration.
//
// Each step, every rank
//
//  1. kicks its particles' velocities by half a step and drifts their
//     positions by a whole step;
//  2. finds the bounding box of all particles (Allreduce with Max), and
//     gives each particle its Peano–Hilbert key in that box (21 bits per
//     dimension, as Gadget-2);
//  3. splits the key range into one segment per rank holding equal numbers
//     of particles: p-1 splitters found together by bisection on the key,
//     each round counting the keys below the candidates locally and
//     summing the counts (Allreduce of p-1 integers), the global key order
//     never materialized anywhere;
//  4. sends each particle to the rank whose segment holds its key: an
//     Alltoall of the counts, then an Alltoallv of the variable-length
//     particle lists (a struct element type: position, velocity, mass, id);
//  5. gathers every particle's position and mass (Allgatherv), computes
//     its particles' accelerations and potentials against all of them, and
//     kicks the velocities by the second half step;
//  6. sums kinetic and potential energy, momentum and the particle count
//     over the ranks (Allreduce).
//
// Each rank keeps its particles sorted by (key, id), and rank order is key
// order, so the gathered positions come in the same order on any number
// of ranks: every force is summed in the same order, and the trajectories
// do not depend on the rank count (bit for bit; the reported energies
// differ only in how the ranks' partial sums are added).
//
// The initial conditions are a Plummer sphere (Aarseth, Hénon & Wielen
// 1974) in N-body units (G = M = 1, E = -1/4), drawn from a seeded
// generator, moved to its centre-of-mass frame. The run checks that the
// total energy drifts by less than -tol (relative), that the total
// momentum stays put (to rounding), and that no particle is lost or
// duplicated, and prints "ok" or "FAILED".
//
// Run it with
//
//	go run ./examples/nbody -np 4 -n 1000 -steps 100 -dt 0.01
//
// or, as processes over TCP under MPICH's launcher,
//
//	go build -o nbody ./examples/nbody && mpiexec -n 4 ./nbody
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

func main() {
	np := flag.Int("np", 4, "number of ranks (goroutines; ignored under a launcher)")
	cfg := config{}
	flag.IntVar(&cfg.n, "n", 1000, "number of particles")
	flag.IntVar(&cfg.steps, "steps", 100, "time steps")
	flag.Float64Var(&cfg.dt, "dt", 0.01, "time step (N-body units: the crossing time is 2√2)")
	flag.Float64Var(&cfg.eps, "eps", 0.05, "Plummer softening length")
	flag.Float64Var(&cfg.tol, "tol", 1e-4, "largest relative energy drift accepted")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the initial conditions")
	flag.Parse()
	if *np < 1 {
		fmt.Fprintf(os.Stderr, "nbody: -np %d: need at least 1 rank\n", *np)
		os.Exit(2)
	}
	mpgo.Main(func(world *comm.Comm) error {
		_, err := nbody(world, cfg, os.Stdout)
		return err
	}, mpgo.WithRanks(*np))
}

// config is one simulation.
type config struct {
	n     int     // particles
	steps int     // time steps
	dt    float64 // time step
	eps   float64 // softening length
	tol   float64 // largest relative energy drift accepted; 0: defaultTol
	seed  uint64  // of the initial conditions
}

const defaultTol = 1e-4

func (c config) validate() error {
	switch {
	case c.n < 2:
		return fmt.Errorf("nbody: %d particles: need at least 2", c.n)
	case c.steps < 0:
		return fmt.Errorf("nbody: %d steps: need at least 0", c.steps)
	case !(c.dt > 0) || math.IsInf(c.dt, 0):
		return fmt.Errorf("nbody: time step %v: need a positive number", c.dt)
	case !(c.eps > 0) || math.IsInf(c.eps, 0):
		return fmt.Errorf("nbody: softening %v: need a positive number", c.eps)
	case c.tol < 0 || math.IsNaN(c.tol):
		return fmt.Errorf("nbody: tolerance %v: need a positive number", c.tol)
	}
	return nil
}

// result is what rank 0 reports of a run.
type result struct {
	ranks                    int
	e0, e                    float64    // total energy at the start and the end
	drift                    float64    // largest |E(t)-E0|/|E0| over the steps
	p0, p                    [3]float64 // total momentum at the start and the end
	dp, pTol                 float64    // |P-P0| and its tolerance
	count                    int        // particles at the end, summed over ranks
	migrated                 int64      // particles that changed rank, over the run
	imbalance                float64    // largest max/mean of particles per rank
	elapsed                  time.Duration
	pos                      []float64 // final positions by id: x, y, z of id 0, then id 1, ...
	ok                       bool
	energyOK, momOK, countOK bool
}

// run simulates on np goroutine ranks and returns rank 0's result.
func run(np int, cfg config, out io.Writer) (result, error) {
	var res result
	err := mpgo.Run(np, func(world *comm.Comm) error {
		r, err := nbody(world, cfg, out)
		if world.Rank() == 0 {
			res = r
		}
		return err
	})
	return res, err
}

// nbody runs the simulation on the ranks of world and writes rank 0's
// report to out. It fails when a check fails.
func nbody(world *comm.Comm, cfg config, out io.Writer) (result, error) {
	if cfg.tol == 0 {
		cfg.tol = defaultTol
	}
	if err := cfg.validate(); err != nil {
		return result{}, err
	}
	s := newSim(world, cfg)
	res := result{ranks: s.p}

	if err := s.decompose(); err != nil {
		return res, err
	}
	if err := s.forces(); err != nil {
		return res, err
	}
	s.migrated = 0 // the initial distribution is not migration
	st0, err := s.stats()
	if err != nil {
		return res, err
	}
	res.e0, res.p0 = st0.energy(), st0.mom
	res.imbalance = st0.imbalance
	t0 := time.Now()
	st := st0
	for range cfg.steps {
		if err := s.step(cfg.dt); err != nil {
			return res, err
		}
		if st, err = s.stats(); err != nil {
			return res, err
		}
		res.drift = max(res.drift, math.Abs(st.energy()-res.e0)/math.Abs(res.e0))
		res.imbalance = max(res.imbalance, st.imbalance)
	}
	res.elapsed = time.Since(t0)
	res.e, res.p, res.count = st.energy(), st.mom, int(st.count)
	res.dp = math.Sqrt(sq(res.p[0]-res.p0[0]) + sq(res.p[1]-res.p0[1]) + sq(res.p[2]-res.p0[2]))
	// Momentum changes only by rounding: each pair's forces cancel
	// exactly, but land in different sums. Allow 1e-12 of the momentum
	// scale Σ m|v| per step.
	res.pTol = 1e-12 * max(st0.mv, st.mv) * float64(cfg.steps+1)
	if res.migrated, err = s.migratedTotal(); err != nil {
		return res, err
	}
	if res.pos, err = s.gatherPositions(); err != nil {
		return res, err
	}
	res.energyOK = res.drift <= cfg.tol
	res.momOK = res.dp <= res.pTol
	res.countOK = res.count == cfg.n
	res.ok = res.energyOK && res.momOK && res.countOK
	if s.rank != 0 {
		if !res.ok {
			return res, errFailed
		}
		return res, nil
	}
	report(out, cfg, res)
	if !res.ok {
		return res, errFailed
	}
	return res, nil
}

var errFailed = fmt.Errorf("nbody: conservation check FAILED")

func report(out io.Writer, cfg config, r result) {
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAILED"
	}
	fmt.Fprintf(out, "nbody: %d particles (Plummer sphere, seed %d), %d ranks, %d steps of dt=%g, softening %g\n",
		cfg.n, cfg.seed, r.ranks, cfg.steps, cfg.dt, cfg.eps)
	perStep, rate := 0.0, 0.0
	if cfg.steps > 0 {
		perStep = r.elapsed.Seconds() / float64(cfg.steps)
		rate = float64(cfg.n) * float64(cfg.n) / perStep
	}
	fmt.Fprintf(out, "nbody: %.3f s, %.3f ms/step, %.1f M interactions/s; %d particles migrated, load imbalance (max/mean) %.3f\n",
		r.elapsed.Seconds(), perStep*1e3, rate/1e6, r.migrated, r.imbalance)
	fmt.Fprintf(out, "nbody: energy E0=%.12f E=%.12f, max relative drift %.3e (tolerance %.1e) %s\n",
		r.e0, r.e, r.drift, cfg.tol, verdict(r.energyOK))
	fmt.Fprintf(out, "nbody: momentum |P-P0|=%.3e (tolerance %.1e) %s\n", r.dp, r.pTol, verdict(r.momOK))
	fmt.Fprintf(out, "nbody: particles %d (expected %d) %s\n", r.count, cfg.n, verdict(r.countOK))
	fmt.Fprintf(out, "nbody: %s\n", verdict(r.ok))
}

func sq(x float64) float64 { return x * x }
