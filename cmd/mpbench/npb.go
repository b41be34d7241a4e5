package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The npb subcommand: a strong-scaling table of the NAS Parallel
// Benchmarks kernels under examples/npb. For each kernel it builds the
// program with the go command, runs it for one class on each rank count
// (goroutine ranks, the kernel's -np flag), reads the figures NPB's
// print_results writes (Time in seconds, Mop/s total, VERIFICATION) and
// sets each run against the one-rank run of the same kernel.

// npbKernels are the kernels the subcommand looks for, in NPB's order.
var npbKernels = []string{"ep", "is", "cg", "mg", "ft"}

// npbOptions are the subcommand's flags.
type npbOptions struct {
	class   string
	ranks   []int
	kernels []string
	dir     string // the module root holding examples/npb
	reps    int
	timeout time.Duration
	gocmd   string
}

// npbRun is one kernel on one rank count: the best of the repetitions.
type npbRun struct {
	kernel   string
	ranks    int
	time     float64 // seconds, as the kernel printed it
	mops     float64 // Mop/s total
	verified bool
	err      error // the run failed or printed no figures
}

// runNPB is "mpbench npb [flags]".
func runNPB(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseNPBArgs(args, stderr)
	if err != nil {
		return err
	}
	bin, err := os.MkdirTemp("", "mpbench-npb-")
	if err != nil {
		return fmt.Errorf("mpbench npb: %w", err)
	}
	defer os.RemoveAll(bin)

	var (
		runs []npbRun
		errs []error
	)
	// The table streams: the header now, each row as its run ends, so that
	// a class A sweep (minutes a run) shows what it has as it goes; the
	// progress lines on stderr say what runs meanwhile.
	t := newNPBTable(stdout, o)
	defer t.finish()
	prog := newNPBProgress(stderr)
	defer prog.stop()
	for _, k := range o.kernels {
		src := filepath.Join(o.dir, "examples", "npb", k)
		if _, err := os.Stat(filepath.Join(src, "main.go")); err != nil {
			t.note(fmt.Sprintf("%s: skipped, no %s", k, filepath.Join(src, "main.go")))
			continue
		}
		exe := filepath.Join(bin, k)
		prog.start(fmt.Sprintf("building %s", k))
		build := exec.CommandContext(ctx, o.gocmd, "build", "-o", exe, "./"+filepath.ToSlash(filepath.Join("examples", "npb", k)))
		build.Dir = o.dir
		if out, err := build.CombinedOutput(); err != nil {
			t.note(fmt.Sprintf("%s: skipped, does not build: %s", k, firstLine(out, err)))
			continue
		}
		for _, np := range o.ranks {
			r := runKernel(ctx, exe, k, o, np, prog)
			if r.err != nil {
				errs = append(errs, r.err)
			} else if !r.verified {
				errs = append(errs, fmt.Errorf("mpbench npb: %s class %s on %d ranks: VERIFICATION UNSUCCESSFUL", k, o.class, np))
			}
			runs = append(runs, r)
			t.row(r)
			if ctx.Err() != nil {
				return errors.Join(append(errs, ctx.Err())...)
			}
		}
	}
	if len(runs) == 0 {
		errs = append(errs, fmt.Errorf("mpbench npb: no kernel found under %s", filepath.Join(o.dir, "examples", "npb")))
	}
	return errors.Join(errs...)
}

// runKernel runs exe -class o.class -np np, o.reps times, and keeps the
// fastest verified run (by Mop/s).
func runKernel(ctx context.Context, exe, kernel string, o *npbOptions, np int, prog *npbProgress) npbRun {
	best := npbRun{kernel: kernel, ranks: np}
	for rep := range o.reps {
		prog.start(fmt.Sprintf("%s class %s on %d ranks, run %d of %d", kernel, o.class, np, rep+1, o.reps))
		rctx, cancel := context.WithTimeout(ctx, o.timeout)
		cmd := exec.CommandContext(rctx, exe, "-class", o.class, "-np", strconv.Itoa(np))
		cmd.Env = plainEnv(os.Environ())
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		r := npbRun{kernel: kernel, ranks: np}
		if err != nil {
			r.err = fmt.Errorf("mpbench npb: %s class %s on %d ranks: %v: %s", kernel, o.class, np, err, lastLine(out.Bytes()))
		} else if r.time, r.mops, r.verified, err = parseNPB(out.Bytes()); err != nil {
			r.err = fmt.Errorf("mpbench npb: %s class %s on %d ranks: %w", kernel, o.class, np, err)
		}
		if rep == 0 || better(r, best) {
			best = r
		}
	}
	return best
}

// better reports whether run a beats run b: a success over a failure, a
// verified run over an unverified one, then the higher Mop/s.
func better(a, b npbRun) bool {
	switch {
	case (a.err == nil) != (b.err == nil):
		return a.err == nil
	case a.verified != b.verified:
		return a.verified
	}
	return a.mops > b.mops
}

// plainEnv is env without the variables a launcher sets, so that a kernel
// started by an mpbench that runs under mpiexec or srun runs its own
// goroutine ranks instead of trying to join that job.
func plainEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "PMI_"), strings.HasPrefix(name, "PMIX_"),
			strings.HasPrefix(name, "OMPI_"), strings.HasPrefix(name, "SLURM_"),
			strings.HasPrefix(name, "HYDRA_"), name == "MPGO_ROOT", name == "MPGO_NP":
			continue
		}
		out = append(out, kv)
	}
	return out
}

var (
	npbTime     = regexp.MustCompile(`(?m)^\s*Time in seconds\s*=\s*(\S+)\s*$`)
	npbMops     = regexp.MustCompile(`(?m)^\s*Mop/s total\s*=\s*(\S+)\s*$`)
	npbVerified = regexp.MustCompile(`(?m)^\s*VERIFICATION\s+(SUCCESSFUL|UNSUCCESSFUL)\s*$`)
)

// parseNPB reads the figures of NPB's print_results from a kernel's
// output.
func parseNPB(out []byte) (seconds, mops float64, verified bool, err error) {
	num := func(re *regexp.Regexp, what string) (float64, error) {
		m := re.FindSubmatch(out)
		if m == nil {
			return 0, fmt.Errorf("no %q line in the output", what)
		}
		v, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) {
			return 0, fmt.Errorf("%s %q: not a figure", what, m[1])
		}
		return v, nil
	}
	if seconds, err = num(npbTime, "Time in seconds"); err != nil {
		return 0, 0, false, err
	}
	if mops, err = num(npbMops, "Mop/s total"); err != nil {
		return 0, 0, false, err
	}
	m := npbVerified.FindSubmatch(out)
	if m == nil {
		return 0, 0, false, errors.New(`no "VERIFICATION" line in the output`)
	}
	return seconds, mops, string(m[1]) == "SUCCESSFUL", nil
}

// npbTable prints the runs as they end, each kernel's against its
// one-rank run (which runs first): speedup is the ratio of Mop/s (the
// work is fixed, and Mop/s comes from the kernel's timer at full
// precision, where the time is printed to 0.01 s), efficiency the speedup
// over the rank count. Columns have fixed widths, so that rows printed
// minutes apart line up.
type npbTable struct {
	w    io.Writer
	o    *npbOptions
	base map[string]float64 // each kernel's Mop/s on one rank
	errs []error            // of failed runs, printed at the end
}

// npbRowFormat lays out a row: kernel, class, ranks, time s, Mop/s total,
// speedup, efficiency, verification.
const npbRowFormat = "%6s  %5s  %5s  %10s  %12s  %7s  %10s  %12s\n"

func newNPBTable(w io.Writer, o *npbOptions) *npbTable {
	fmt.Fprintf(w, "# mpbench npb: NAS Parallel Benchmarks class %s on %s goroutine ranks, GOMAXPROCS %d, %d CPUs, %s %s/%s",
		o.class, joinInts(o.ranks), runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if l := loadAverage(); l != "" {
		fmt.Fprintf(w, ", load average %s at the start", l)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "# %s\n", thisMachine())
	fmt.Fprintf(w, "# speedup = Mop/s on p ranks / Mop/s on 1 rank of the same kernel; efficiency = speedup / p; best of %d run(s)\n", o.reps)
	fmt.Fprintf(w, npbRowFormat, "kernel", "class", "ranks", "time s", "Mop/s total", "speedup", "efficiency", "verification")
	return &npbTable{w: w, o: o, base: map[string]float64{}}
}

// note prints a note between the rows.
func (t *npbTable) note(s string) { fmt.Fprintf(t.w, "# %s\n", s) }

// row prints run r.
func (t *npbTable) row(r npbRun) {
	name, ranks := strings.ToUpper(r.kernel), strconv.Itoa(r.ranks)
	if r.err != nil {
		t.errs = append(t.errs, r.err)
		fmt.Fprintf(t.w, npbRowFormat, name, t.o.class, ranks, "-", "-", "-", "-", "failed")
		return
	}
	if r.ranks == 1 {
		t.base[r.kernel] = r.mops
	}
	speedup, eff := "-", "-"
	if b := t.base[r.kernel]; b > 0 {
		s := r.mops / b
		speedup, eff = fmt.Sprintf("%.2f", s), fmt.Sprintf("%.0f%%", 100*s/float64(r.ranks))
	}
	verdict := "SUCCESSFUL"
	if !r.verified {
		verdict = "UNSUCCESSFUL"
	}
	fmt.Fprintf(t.w, npbRowFormat, name, t.o.class, ranks, fmt.Sprintf("%.2f", r.time), fmt.Sprintf("%.2f", r.mops), speedup, eff, verdict)
}

// finish prints the failed runs' errors under the table.
func (t *npbTable) finish() {
	for _, err := range t.errs {
		fmt.Fprintf(t.w, "# %v\n", err)
	}
}

// npbProgress says on stderr what runs: a line as each build or run
// starts, and one every npbTick while it lasts.
type npbProgress struct {
	w    io.Writer
	mu   sync.Mutex
	what string    // guarded by mu
	at   time.Time // when what started; guarded by mu
	done chan struct{}
	wg   sync.WaitGroup
}

// npbTick is how often a long run is reported as still running.
var npbTick = 30 * time.Second

func newNPBProgress(w io.Writer) *npbProgress {
	p := &npbProgress{w: w, done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(npbTick)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
				p.mu.Lock()
				if p.what != "" {
					fmt.Fprintf(p.w, "mpbench npb: %s: running for %v\n", p.what, time.Since(p.at).Round(time.Second))
				}
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// start reports that what starts now.
func (p *npbProgress) start(what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.what, p.at = what, time.Now()
	fmt.Fprintf(p.w, "mpbench npb: %s\n", what)
}

// stop ends the reports.
func (p *npbProgress) stop() {
	close(p.done)
	p.wg.Wait()
}

// parseNPBArgs reads the subcommand's flags.
func parseNPBArgs(args []string, stderr io.Writer) (*npbOptions, error) {
	o := &npbOptions{}
	fs := flag.NewFlagSet("mpbench npb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.class, "class", "S", "problem class (S, W, A, ...)")
	ranks := fs.String("np", "1,2,4,8", "rank counts, comma-separated (1 is added: the speedups need it)")
	kernels := fs.String("kernels", strings.Join(npbKernels, ","), "kernels under examples/npb, comma-separated; missing ones are skipped")
	fs.StringVar(&o.dir, "dir", "", "root of a checkout of the mpgo module, whose examples/npb holds the kernels (default: the checkout around the working directory, else the one this binary was built from)")
	fs.IntVar(&o.reps, "reps", 1, "runs of each kernel and rank count: the fastest is reported")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "longest one run may take")
	fs.StringVar(&o.gocmd, "go", "go", "the go command that builds the kernels")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mpbench npb [flags]\n\nbuilds the NPB kernels under examples/npb that exist, runs each on every rank count,\nand prints Mop/s with the speedup and parallel efficiency against one rank.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, errUsage
	}
	var bad []string
	if fs.NArg() > 0 {
		bad = append(bad, fmt.Sprintf("unexpected arguments %q", fs.Args()))
	}
	if len(o.class) != 1 || !strings.Contains("SWABCDE", strings.ToUpper(o.class)) {
		bad = append(bad, fmt.Sprintf("-class %q: want one of S, W, A, B, C, D, E", o.class))
	}
	o.class = strings.ToUpper(o.class)
	seen := map[int]bool{1: true}
	o.ranks = []int{1}
	for _, f := range strings.Split(*ranks, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			bad = append(bad, fmt.Sprintf("-np: %q is not a rank count", f))
			continue
		}
		if !seen[n] {
			seen[n], o.ranks = true, append(o.ranks, n)
		}
	}
	for _, k := range strings.Split(*kernels, ",") {
		if k = strings.ToLower(strings.TrimSpace(k)); k != "" {
			if strings.ContainsAny(k, `/\.`) {
				bad = append(bad, fmt.Sprintf("-kernels: %q is not a kernel name", k))
				continue
			}
			o.kernels = append(o.kernels, k)
		}
	}
	if len(o.kernels) == 0 {
		bad = append(bad, "-kernels names none")
	}
	if o.reps < 1 {
		bad = append(bad, "-reps must be at least 1")
	}
	if o.timeout <= 0 {
		bad = append(bad, "-timeout must be positive")
	}
	if o.dir == "" {
		wd, _ := os.Getwd()
		d, err := findNPB(wd, sourceRoot())
		if err != nil {
			bad = append(bad, err.Error())
		}
		o.dir = d
	}
	if len(bad) > 0 {
		fmt.Fprintf(stderr, "mpbench npb: %s\n", strings.Join(bad, "; "))
		fs.Usage()
		return nil, errUsage
	}
	return o, nil
}

// mpgoModule is the module whose examples/npb holds the kernels.
const mpgoModule = "github.com/mpgo/mpgo"

// findNPB returns the root of the mpgo module whose examples/npb the
// subcommand builds the kernels from: the module at or above wd when it is
// mpgo's (a checkout), else src (where this binary's sources were, when it
// still holds them: a go install from a checkout or of a version in the
// module cache). A binary built elsewhere and run outside a checkout
// carries no kernels: the error names -dir.
func findNPB(wd, src string) (string, error) {
	if root := moduleAbove(wd); root != "" && moduleName(root) == mpgoModule {
		return root, nil
	}
	if src != "" && moduleName(src) == mpgoModule {
		if _, err := os.Stat(filepath.Join(src, "examples", "npb")); err == nil {
			return src, nil
		}
	}
	return "", fmt.Errorf("cannot find the NPB kernels (examples/npb of %s): not in a checkout of it, and this binary's sources are gone;"+
		" run it in a checkout, or give -dir with the root of one (git clone, or $(go env GOMODCACHE)/%s@VERSION)", mpgoModule, mpgoModule)
}

// moduleAbove returns the nearest directory at or above d that holds a
// go.mod, or "".
func moduleAbove(d string) string {
	for d != "" {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
	return ""
}

// moduleName returns the module path root's go.mod declares, or "".
func moduleName(root string) string {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// sourceRoot returns the module root this file was compiled from, as the
// compiler recorded it ("" when built with -trimpath).
func sourceRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(file))) // cmd/mpbench/npb.go
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// firstLine is the first line of a failed command's output, or its error.
func firstLine(out []byte, err error) string {
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return err.Error()
}

// lastLine is the last non-empty line of a command's output.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
