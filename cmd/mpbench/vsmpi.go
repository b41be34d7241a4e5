package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// mpiSource is the C program --vs-mpi builds and runs: the same benchmark
// definitions, on an MPI library.
//
//go:embed mpi/mpbench.c
var mpiSource []byte

// mpiRunner runs the C program under mpiexec. It is set up once per
// mpbench run and removed by close.
type mpiRunner struct {
	mpiexec string
	extra   []string // mpiexec flags before -n (Open MPI's)
	dir     string   // the temporary directory holding source and binary
	bin     string
	timeout time.Duration
	label   string // the library, short, for column heads: "MPICH", "Open MPI", "MPI"
	version string // the library's own version line
}

// setupMPI finds mpicc and mpiexec on PATH and builds the C program into a
// temporary directory. When either is missing or the build fails it
// returns nil and the reason, for the tables' notes.
func setupMPI(ctx context.Context, mpicc, mpiexec string, timeout time.Duration) (*mpiRunner, string) {
	cc, err := exec.LookPath(mpicc)
	if err != nil {
		return nil, fmt.Sprintf("%s not found on PATH, so no MPI figures (install MPICH or Open MPI: apt-get install mpich)", mpicc)
	}
	run, err := exec.LookPath(mpiexec)
	if err != nil {
		return nil, fmt.Sprintf("%s not found on PATH, so no MPI figures", mpiexec)
	}
	dir, err := os.MkdirTemp("", "mpbench-mpi-")
	if err != nil {
		return nil, fmt.Sprintf("no MPI figures: %v", err)
	}
	r := &mpiRunner{mpiexec: run, dir: dir, bin: filepath.Join(dir, "mpbench_mpi"), timeout: timeout, label: "MPI"}
	src := filepath.Join(dir, "mpbench.c")
	if err := os.WriteFile(src, mpiSource, 0o644); err != nil {
		r.close()
		return nil, fmt.Sprintf("no MPI figures: %v", err)
	}
	out, err := exec.CommandContext(ctx, cc, "-O2", "-o", r.bin, src).CombinedOutput()
	if err != nil {
		r.close()
		return nil, fmt.Sprintf("%s failed, so no MPI figures: %v: %s", mpicc, err, lastLines(out, 3))
	}
	// Open MPI's mpiexec refuses to start more processes than cores, and
	// to run as root, unless told; MPICH's Hydra needs neither.
	if v, _ := exec.CommandContext(ctx, run, "--version").CombinedOutput(); bytes.Contains(v, []byte("Open MPI")) ||
		bytes.Contains(v, []byte("OpenRTE")) {
		r.extra = append(r.extra, "--oversubscribe")
		if os.Geteuid() == 0 {
			r.extra = append(r.extra, "--allow-run-as-root")
		}
	}
	return r, ""
}

// close removes the temporary directory.
func (r *mpiRunner) close() {
	if r != nil {
		os.RemoveAll(r.dir)
	}
}

// run runs benchmark bench on n MPI processes for every plan, reps times,
// and returns the figures of each repetition, indexed by plan.
func (r *mpiRunner) run(ctx context.Context, bench string, n, window, reps int, plans []iterPlan) ([][]sample, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	args := append(append([]string{}, r.extra...), "-n", strconv.Itoa(n), r.bin, bench, strconv.Itoa(reps), strconv.Itoa(window))
	for _, p := range plans {
		args = append(args, fmt.Sprintf("%d:%d:%d", p.Size, p.Iters, p.Skip))
	}
	cmd := exec.CommandContext(ctx, r.mpiexec, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second // the ranks may hold the pipes a moment after mpiexec dies
	if err := cmd.Run(); err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("no result within %v (-mpi-timeout)", r.timeout)
		}
		return nil, fmt.Errorf("mpiexec -n %d %s: %w: %s", n, bench, err, lastLines(stderr.Bytes(), 3))
	}
	version, out, err := parseMPIOutput(&stdout, reps, len(plans))
	if err != nil {
		return nil, fmt.Errorf("mpiexec -n %d %s: %w", n, bench, err)
	}
	r.version, r.label = version, libraryLabel(version)
	return out, nil
}

// parseMPIOutput reads the C program's output: its "V" line and one "R"
// line per repetition and plan; other lines (a library's warnings) are
// skipped. It fails unless every repetition of every plan is there.
func parseMPIOutput(rd io.Reader, reps, nplans int) (string, [][]sample, error) {
	out := make([][]sample, reps)
	seen := make([][]bool, reps)
	for i := range out {
		out[i], seen[i] = make([]sample, nplans), make([]bool, nplans)
	}
	version := ""
	sc := bufio.NewScanner(rd)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "V "); ok {
			version = strings.Join(strings.Fields(v), " ")
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "R" {
			continue
		}
		if len(f) != 4+int(nMetrics) {
			return "", nil, fmt.Errorf("malformed line %q", line)
		}
		rep, err1 := strconv.Atoi(f[1])
		idx, err2 := strconv.Atoi(f[2])
		if err := errors.Join(err1, err2); err != nil || rep < 0 || rep >= reps || idx < 0 || idx >= nplans {
			return "", nil, fmt.Errorf("malformed line %q", line)
		}
		for m := range nMetrics {
			v, err := strconv.ParseFloat(f[4+int(m)], 64)
			if err != nil {
				return "", nil, fmt.Errorf("malformed line %q: %w", line, err)
			}
			out[rep][idx][m] = v
		}
		seen[rep][idx] = true
	}
	if err := sc.Err(); err != nil {
		return "", nil, err
	}
	for rep := range seen {
		for idx, ok := range seen[rep] {
			if !ok {
				return "", nil, fmt.Errorf("no figures for size #%d of repetition %d in the output", idx, rep)
			}
		}
	}
	return version, out, nil
}

// libraryLabel shortens MPI_Get_library_version's line to the library's
// name.
func libraryLabel(version string) string {
	v := strings.ToLower(version)
	switch {
	case strings.Contains(v, "open mpi"):
		return "Open MPI"
	case strings.Contains(v, "intel"):
		return "Intel MPI"
	case strings.Contains(v, "mvapich"):
		return "MVAPICH"
	case strings.Contains(v, "mpich"):
		return "MPICH"
	}
	return "MPI"
}

// lastLines returns the last n non-empty lines of b, joined by " | ".
func lastLines(b []byte, n int) string {
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
