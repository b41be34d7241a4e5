// Package npb holds what the NAS Parallel Benchmarks kernels in
// examples/npb share (NPB 3.4): the linear congruential generator randlc /
// vranlc, problem classes, the command line, and the results report in
// NPB's format.
package npb

import (
	"flag"
	"fmt"
	"io"
	"math/bits"
	"strings"
	"time"
)

// The generator of NPB: x_{k+1} = a·x_k mod 2^46, returned as x·2^-46.
// Seeds and multipliers are odd integers below 2^46 held in float64s, as
// in NPB's randlc; the arithmetic here is done on integers, which gives
// the same sequence bit for bit.
const (
	mod46 = 1<<46 - 1
	r46   = 1.0 / (1 << 46)
)

// Randlc advances *x by one step of the generator with multiplier a and
// returns the new value scaled to (0, 1).
func Randlc(x *float64, a float64) float64 {
	_, lo := bits.Mul64(uint64(*x), uint64(a))
	v := lo & mod46
	*x = float64(v)
	return float64(v) * r46
}

// Vranlc fills y with the next len(y) values of the generator.
func Vranlc(x *float64, a float64, y []float64) {
	xi, ai := uint64(*x), uint64(a)
	for i := range y {
		_, lo := bits.Mul64(xi, ai)
		xi = lo & mod46
		y[i] = float64(xi) * r46
	}
	*x = float64(xi)
}

// Pow46 returns a^n mod 2^46 (for jumping the generator ahead n steps:
// the seed of step k+n is Pow46(a, n)·x_k).
func Pow46(a float64, n int64) float64 {
	r, b := uint64(1), uint64(a)
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			_, lo := bits.Mul64(r, b)
			r = lo & mod46
		}
		_, lo := bits.Mul64(b, b)
		b = lo & mod46
	}
	return float64(r)
}

// Class is an NPB problem class: S, W, A, B, C, D or E.
type Class byte

// ParseClass reads a class letter.
func ParseClass(s string) (Class, error) {
	if len(s) == 1 && strings.Contains("SWABCDE", strings.ToUpper(s)) {
		return Class(strings.ToUpper(s)[0]), nil
	}
	return 0, fmt.Errorf("class %q: want one of S, W, A, B, C, D, E", s)
}

func (c Class) String() string { return string(rune(c)) }

// Flags are the command line every kernel takes: -class and -np.
type Flags struct {
	Class Class
	NP    int
}

// ParseFlags parses os.Args for a kernel whose default class is def.
func ParseFlags(def Class) (Flags, error) {
	class := flag.String("class", def.String(), "problem class (S, W, A, B, C, ...)")
	np := flag.Int("np", 4, "number of ranks (goroutines; ignored under a launcher)")
	flag.Parse()
	c, err := ParseClass(*class)
	if err != nil {
		return Flags{}, err
	}
	if *np < 1 {
		return Flags{}, fmt.Errorf("-np %d: need at least 1 rank", *np)
	}
	return Flags{Class: c, NP: *np}, nil
}

// Result is what a kernel reports at the end of a run, as NPB's
// print_results does.
type Result struct {
	Name       string // "CG", "MG", ...
	Class      Class
	Size       string // problem size as NPB prints it, e.g. "1400" or "32x32x32"
	Iterations int
	Time       time.Duration
	Procs      int
	Mops       float64 // total Mop/s
	OpType     string  // "floating point", "keys ranked", "Random numbers generated"
	Verified   bool
}

// Print writes r in NPB's layout.
func (r Result) Print(w io.Writer) {
	verdict := "UNSUCCESSFUL"
	if r.Verified {
		verdict = "SUCCESSFUL"
	}
	fmt.Fprintf(w, "\n\n %s Benchmark Completed.\n", r.Name)
	line := func(k string, v any) { fmt.Fprintf(w, " %-15s = %24v\n", k, v) }
	line("Class", r.Class)
	line("Size", r.Size)
	line("Iterations", r.Iterations)
	line("Time in seconds", fmt.Sprintf("%.2f", r.Time.Seconds()))
	line("Total processes", r.Procs)
	line("Mop/s total", fmt.Sprintf("%.2f", r.Mops))
	line("Mop/s/process", fmt.Sprintf("%.2f", r.Mops/float64(r.Procs)))
	line("Operation type", r.OpType)
	line("Verification", verdict)
	line("Version", "3.4 (mpgo)")
	fmt.Fprintf(w, "\n VERIFICATION %s\n", verdict)
}
