package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/internal/pmi"
)

// Under a launcher (mpiexec -n 2 mpbench …) mpbench measures the backend
// its processes run on, instead of goroutine ranks of one process: the
// shared-memory backend between processes of one host, TCP with
// MPGO_SHM=0. Its command line and output are those of the C side
// (mpi/mpbench.c), so that one script runs both under the same launcher
// and compares their lines:
//
//	mpiexec -n 2 mpbench BENCH REPS WINDOW SIZE:ITERS:SKIP...
//
// Rank 0 prints "V mpgo <version> <device>", then for each repetition and
// size "R <rep> <index> <size> <lat> <min> <max> <bw> <rate>", the same
// kernels as the tables' (osu_p2p.go, osu_coll.go, imb.go) timing them.
// MPBENCH_WIN=shared makes the one-sided benchmarks' windows with
// AllocSharedWindow (one segment the processes map, operations straight
// to memory) instead of AllocWindow (default, MPBENCH_WIN=allocate:
// operations on the target's handlers).

// underLauncher reports whether a launcher started this process.
func underLauncher() bool { return pmi.Detect(os.Getenv) != pmi.None }

// runLaunched is mpbench under a launcher; it returns the exit status.
func runLaunched(args []string, stdout, stderr io.Writer) int {
	b, reps, window, plans, err := parseLaunched(args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	maxSize := 0
	for _, p := range plans {
		maxSize = max(maxSize, p.Size)
	}
	dev := "shm+tcp"
	switch {
	case os.Getenv("MPGO_BACKEND") == "rdma":
		dev = "rdma/" + os.Getenv("FI_PROVIDER")
		if os.Getenv("MPGO_WINDOW_PATH") == "am" {
			dev += " (windows on active messages)"
		}
	case os.Getenv("MPGO_SHM") == "0":
		dev = "tcp"
	}
	win := os.Getenv("MPBENCH_WIN")
	if win != "" && win != "allocate" && win != "shared" {
		fmt.Fprintf(stderr, "mpbench: MPBENCH_WIN=%q: want allocate or shared\n", win)
		return 2
	}
	err = mpgo.Join(func(w *comm.Comm) error {
		e, err := newEnv(w, b, maxSize, window)
		if err != nil {
			return err
		}
		e.shared = win == "shared"
		if w.Rank() == 0 {
			fmt.Fprintf(stdout, "V mpgo %s %s\n", mpgo.Version, dev)
		}
		for rep := range reps {
			for i, p := range plans {
				if err := w.Barrier(); err != nil {
					return err
				}
				s, err := b.kernel(e, p)
				if err != nil {
					return err
				}
				if w.Rank() == 0 {
					fmt.Fprintf(stdout, "R %d %d %d %.9g %.9g %.9g %.9g %.9g\n", rep, i, p.Size, s[mLat], s[mMin], s[mMax], s[mBW], s[mRate])
				}
			}
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// parseLaunched reads BENCH REPS WINDOW SIZE:ITERS:SKIP...
func parseLaunched(args []string) (*benchmark, int, int, []iterPlan, error) {
	usage := fmt.Errorf("%w: under a launcher: mpbench BENCH REPS WINDOW SIZE:ITERS:SKIP...", errUsage)
	if len(args) < 4 {
		return nil, 0, 0, nil, usage
	}
	b := find(args[0])
	reps, err1 := strconv.Atoi(args[1])
	window, err2 := strconv.Atoi(args[2])
	if b == nil || err1 != nil || err2 != nil || reps < 1 || window < 1 {
		return nil, 0, 0, nil, usage
	}
	var plans []iterPlan
	for _, a := range args[3:] {
		f := strings.Split(a, ":")
		if len(f) != 3 {
			return nil, 0, 0, nil, fmt.Errorf("%w: %q is not SIZE:ITERS:SKIP", usage, a)
		}
		var p iterPlan
		var errs [3]error
		p.Size, errs[0] = strconv.Atoi(f[0])
		p.Iters, errs[1] = strconv.Atoi(f[1])
		p.Skip, errs[2] = strconv.Atoi(f[2])
		if errs != [3]error{} || p.Size < 0 || p.Iters < 1 || p.Skip < 0 {
			return nil, 0, 0, nil, fmt.Errorf("%w: %q is not SIZE:ITERS:SKIP", usage, a)
		}
		plans = append(plans, p)
	}
	return b, reps, window, plans, nil
}
