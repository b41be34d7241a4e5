package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// tiny is a command line that runs any benchmark in milliseconds: sizes up
// to 64 bytes, 3 timed iterations after 1 warm-up, 2 repetitions, 3 ranks
// where a benchmark takes more than 2 (an odd count, and not a power of
// two, for the trees and rings).
var tiny = []string{"-max", "64", "-iters", "3", "-skip", "1", "-reps", "2", "-np", "3", "-window", "4"}

func tinyOptions(t *testing.T) *options {
	t.Helper()
	o, _, err := parseArgs(append(tiny, "latency"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestEveryBenchmark runs each benchmark small and checks its figures: a
// row per size, every reported figure positive (bandwidths above 0 bytes),
// min ≤ avg ≤ max over ranks, and the baselines measured.
func TestEveryBenchmark(t *testing.T) {
	o := tinyOptions(t)
	for _, b := range benchmarks {
		t.Run(b.name, func(t *testing.T) {
			r := &runner{o: o, be: goroutines{}, prog: &progress{}}
			res, err := r.run(context.Background(), b)
			if err != nil {
				t.Fatal(err)
			}
			plans := b.plans(o)
			if len(res.rows) != len(plans) {
				t.Fatalf("%d rows, want %d", len(res.rows), len(plans))
			}
			for i, row := range res.rows {
				if row.plan != plans[i] {
					t.Errorf("row %d: plan %+v, want %+v", i, row.plan, plans[i])
				}
				for _, m := range b.figures {
					s := row.mpgo[m]
					if s.N != o.reps {
						t.Errorf("%d bytes: %v over %d repetitions, want %d", row.plan.Size, m, s.N, o.reps)
					}
					zeroOK := (m == mBW || m == mRate) && row.plan.Size == 0
					if !(s.Min > 0 || zeroOK) || math.IsInf(s.Max, 0) || math.IsNaN(s.Median) {
						t.Errorf("%d bytes: %v = %+v, want positive and finite", row.plan.Size, m, s)
					}
				}
				if b.has(mMin) {
					lo, avg, hi := row.mpgo[mMin].Median, row.mpgo[mLat].Median, row.mpgo[mMax].Median
					if !(lo <= avg*(1+1e-9) && avg <= hi*(1+1e-9)) {
						t.Errorf("%d bytes: rank min %v, avg %v, max %v out of order", row.plan.Size, lo, avg, hi)
					}
				}
				if b.chanBase && (!row.chanLat.valid() || !row.vsChan.valid() || row.vsChan.N != o.reps) {
					t.Errorf("%d bytes: no channel baseline: %+v, ratio %+v", row.plan.Size, row.chanLat, row.vsChan)
				}
				if b.copyBase && row.plan.Size > 0 && (!row.copyBW.valid() || !row.copyLat.valid()) {
					t.Errorf("%d bytes: no copy baseline: %+v %+v", row.plan.Size, row.copyLat, row.copyBW)
				}
				if b.copyBase && row.plan.Size > 0 && b.has(mBW) && !row.vsCopyBW.valid() {
					t.Errorf("%d bytes: no ratio to copy()'s bandwidth: %+v", row.plan.Size, row.vsCopyBW)
				}
				// A ratio is the median of per-repetition ratios: it lies
				// within the range of mpgo's figure over the baseline's.
				if s := row.vsChan; s.valid() {
					lo, hi := row.mpgo[mLat].Min/row.chanLat.Max, row.mpgo[mLat].Max/row.chanLat.Min
					if s.Median < lo*(1-1e-9) || s.Median > hi*(1+1e-9) {
						t.Errorf("%d bytes: ratio to chan %v outside [%v, %v]", row.plan.Size, s.Median, lo, hi)
					}
				}
				if b.class == collective && (row.chanLat.N != 0 || row.copyBW.N != 0) {
					t.Errorf("%d bytes: a collective with point-to-point baselines", row.plan.Size)
				}
			}
			var out bytes.Buffer
			if err := writeTable(&out, res); err != nil {
				t.Fatal(err)
			}
			if got := tableRows(out.String()); got != len(plans)+1 {
				t.Errorf("table has %d lines of header and rows, want %d:\n%s", got, len(plans)+1, out.String())
			}
		})
	}
}

// tableRows counts the table's lines that are not comments or blank.
func tableRows(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			n++
		}
	}
	return n
}

// TestRunCommandLine runs mpbench as a user would, flags on both sides of
// the benchmark names, and checks the tables it prints.
func TestRunCommandLine(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := append([]string{"-max", "16"}, "latency", "bcast")
	args = append(args, tiny[2:]...)
	if err := run(context.Background(), args, &stdout, &stderr, nil); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"# mpbench latency: osu_latency", "# mpbench bcast: osu_bcast",
		"chan µs", "vs chan", "copy µs", "rank max µs", "on 3 goroutine ranks"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// latency: 0..16 is 6 sizes; bcast: 1..16 is 5; a header line each.
	if got := tableRows(out); got != 6+1+5+1 {
		t.Errorf("%d table lines, want 13:\n%s", got, out)
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
}

func TestBadCommandLines(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"nosuch"},
		{"latency", "-min", "1K", "-max", "1"},
		{"latency", "-reps", "0"},
		{"latency", "-max", "lots"},
		{"latency", "-window", "0"},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), args, &bytes.Buffer{}, &stderr, nil)
		if !errors.Is(err, errUsage) {
			t.Errorf("%q: err %v, want errUsage", args, err)
		}
		if stderr.Len() == 0 {
			t.Errorf("%q: nothing said on stderr", args)
		}
	}
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &bytes.Buffer{}, &stderr, nil); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	if !strings.Contains(stderr.String(), "mbw_mr") {
		t.Errorf("usage does not list the benchmarks:\n%s", stderr.String())
	}
}

// TestCancel: a cancelled context stops the run with an error, leaving no
// goroutine behind (TestMain checks).
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := run(ctx, []string{"latency", "-max", "16", "-reps", "1"}, &bytes.Buffer{}, &bytes.Buffer{}, nil)
	if err == nil {
		t.Fatal("a cancelled run succeeded")
	}
}

func TestProgress(t *testing.T) {
	var w bytes.Buffer
	p := &progress{w: &w}
	p.show("first %d", 12345)
	p.show("second")
	p.clear()
	if got, want := w.String(), "\rfirst 12345\rsecond     \r           \r"; got != want {
		t.Errorf("progress wrote %q, want %q", got, want)
	}
	(&progress{}).show("nowhere") // no writer: nothing, no panic
	var nilp *progress
	nilp.clear()
}

// TestCollectives checks the results of typed.Comm's collectives as the
// benchmarks call them (the views of env, byte messages and float32
// reductions), on 1 to 5 ranks and every root.
func TestCollectives(t *testing.T) {
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			err := mpgo.Run(n, checkCollectives)
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func checkCollectives(w *comm.Comm) error {
	e, err := newEnv(w, find("allreduce"), 64, 1)
	if err != nil {
		return err
	}
	n, r := w.Size(), w.Rank()
	const k = 3
	for root := 0; root < n; root++ {
		buf := make([]byte, k)
		if r == root {
			copy(buf, []byte{byte(root), 7, 9})
		}
		if err := e.bytes.Bcast(buf, root); err != nil {
			return err
		}
		if buf[0] != byte(root) || buf[1] != 7 || buf[2] != 9 {
			return fmt.Errorf("rank %d: bcast from %d got %v", r, root, buf)
		}
		send := []float32{float32(r), 1}
		recv := make([]float32, 2)
		if err := e.floats.Reduce(send, recv, typed.Sum[float32], root); err != nil {
			return err
		}
		if want := float32(n * (n - 1) / 2); r == root && (recv[0] != want || recv[1] != float32(n)) {
			return fmt.Errorf("rank %d: reduce to %d got %v, want [%v %d]", r, root, recv, want, n)
		}
	}
	recv := make([]float32, 1)
	if err := e.floats.Allreduce([]float32{float32(r + 1)}, recv, typed.Sum[float32]); err != nil {
		return err
	}
	if want := float32(n * (n + 1) / 2); recv[0] != want {
		return fmt.Errorf("rank %d: allreduce got %v, want %v", r, recv[0], want)
	}
	all := make([]byte, n*k)
	if err := e.bytes.Allgather([]byte{byte(r), byte(r), byte(r)}, all); err != nil {
		return err
	}
	for i, v := range all {
		if v != byte(i/k) {
			return fmt.Errorf("rank %d: allgather got %v", r, all)
		}
	}
	send, got := make([]byte, n*k), make([]byte, n*k)
	for i := range send {
		send[i] = byte(10*r + i/k) // block j of rank r: 10r+j
	}
	if err := e.bytes.Alltoall(send, got); err != nil {
		return err
	}
	for i, v := range got {
		if v != byte(10*(i/k)+r) { // block j received from rank j: 10j+r
			return fmt.Errorf("rank %d: alltoall got %v", r, got)
		}
	}
	return nil
}

func TestHuman(t *testing.T) {
	for n, want := range map[int]string{0: "0 B", 1000: "1000 B", 1024: "1 KiB", 64 << 20: "64 MiB", 3 << 10: "3 KiB"} {
		if got := human(n); got != want {
			t.Errorf("human(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestTablesStream: each row is printed as soon as its last repetition is
// measured, before the next size runs (stdout and the progress lines
// share one writer here, so the lines mark when each size started).
func TestTablesStream(t *testing.T) {
	var out bytes.Buffer
	prog := &progress{w: &out, every: time.Nanosecond}
	if err := run(context.Background(), append([]string{"latency", "-max", "2"}, tiny[2:]...), &out, &out, prog); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	t.Logf("output:\n%s", s)
	at := 0
	for _, re := range []string{
		`# mpbench latency: osu_latency`,
		`(?m)^# mpgo v\S+, CPU .+, host .+, \d{4}-\d\d-\d\d \d\d:\d\d UTC$`,
		`(?m)^\s+bytes\s+iters\s+mpgo µs`,
		`mpbench: latency: repetition 2/2, 0 B \(1/3\)`,
		`(?m)^\s+0\s+3\s`,
		`mpbench: latency: repetition 2/2, 1 B \(2/3\)`,
		`(?m)^\s+1\s+3\s`,
		`mpbench: latency: repetition 2/2, 2 B \(3/3\)`,
		`(?m)^\s+2\s+3\s`,
	} {
		loc := regexp.MustCompile(re).FindStringIndex(s[at:])
		if loc == nil {
			t.Fatalf("no %s after offset %d: the rows do not stream in order", re, at)
		}
		at += loc[1]
	}
	// Rows printed apart line up: the columns of every line end at one place.
	var widths []int
	for _, l := range strings.Split(s, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "mpbench:") {
			l, _, _ = strings.Cut(l, "  note") // the note trails the columns
			l, _, _ = strings.Cut(l, "  noisy:")
			widths = append(widths, utf8.RuneCountInString(l))
		}
	}
	for _, w := range widths[1:] {
		if w != widths[0] {
			t.Errorf("table lines of widths %v, want one width", widths)
			break
		}
	}
}

// Where stderr is no terminal, progress writes whole lines, at most one
// per interval.
func TestProgressLines(t *testing.T) {
	var w bytes.Buffer
	p := &progress{w: &w, every: time.Hour}
	p.show("first %d", 1)
	p.show("second")
	p.clear()
	if got, want := w.String(), "mpbench: first 1\n"; got != want {
		t.Errorf("progress wrote %q, want %q", got, want)
	}
}
