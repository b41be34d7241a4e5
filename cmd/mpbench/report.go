package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
)

// column is one column of a result's table.
type column struct {
	head string
	cell func(r *row) string
}

// columns returns the table's columns for res: size and iterations, then
// for each figure its median and min–max over the repetitions, each
// baseline with the ratio of mpgo's figure to it, the MPI figure with the
// same ratio. (writeTable adds the note on noisy rows.)
func columns(res *result) []column {
	b := res.bench
	mpi := res.mpi
	cols := []column{
		{"bytes", func(r *row) string { return strconv.Itoa(r.plan.Size) }},
		{"iters", func(r *row) string { return strconv.Itoa(r.plan.Iters) }},
	}
	if b.has(mLat) {
		lat := "mpgo µs"
		if b.has(mMin) {
			lat = "mpgo avg µs"
		}
		cols = append(cols,
			column{lat, func(r *row) string { return num(r.mpgo[mLat]) }},
			column{"min–max", func(r *row) string { return span(r.mpgo[mLat]) }})
		if b.has(mMin) {
			cols = append(cols,
				column{"rank min µs", func(r *row) string { return num(r.mpgo[mMin]) }},
				column{"rank max µs", func(r *row) string { return num(r.mpgo[mMax]) }})
		}
		if b.chanBase {
			cols = append(cols,
				column{"chan µs", func(r *row) string { return num(r.chanLat) }},
				column{"vs chan", func(r *row) string { return paired(r.vsChan) }})
		}
		if b.copyBase && !b.has(mBW) {
			cols = append(cols,
				column{"copy µs", func(r *row) string { return num(r.copyLat) }},
				column{"vs copy", func(r *row) string { return paired(r.vsCopyLat) }})
		}
		if mpi != "" {
			cols = append(cols,
				column{mpi + " µs", func(r *row) string { return num(r.mpi[mLat]) }},
				column{"vs " + mpi, func(r *row) string { return times(r.mpgo[mLat], r.mpi[mLat]) }})
		}
	}
	if b.has(mBW) {
		cols = append(cols,
			column{"mpgo MB/s", func(r *row) string { return num(r.mpgo[mBW]) }},
			column{"min–max", func(r *row) string { return span(r.mpgo[mBW]) }})
		if b.copyBase {
			cols = append(cols,
				column{"copy MB/s", func(r *row) string { return num(r.copyBW) }},
				column{"vs copy", func(r *row) string { return paired(r.vsCopyBW) }})
		}
		if mpi != "" {
			cols = append(cols,
				column{mpi + " MB/s", func(r *row) string { return num(r.mpi[mBW]) }},
				column{"vs " + mpi, func(r *row) string { return times(r.mpgo[mBW], r.mpi[mBW]) }})
		}
	}
	if b.has(mRate) {
		cols = append(cols, column{"mpgo msgs/s", func(r *row) string { return num(r.mpgo[mRate]) }})
		if mpi != "" {
			cols = append(cols, column{mpi + " msgs/s", func(r *row) string { return num(r.mpi[mRate]) }})
		}
	}
	return cols
}

// num formats a median as OSU prints its figures, with two decimals, but
// with three significant digits below 1 (a copy of a few bytes takes
// nanoseconds); "–" for a figure not measured.
func num(s summary) string {
	if s.N == 0 {
		return "–"
	}
	return figure(s.Median)
}

func figure(x float64) string {
	if x != 0 && math.Abs(x) < 0.995 {
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// span formats the repetitions' range.
func span(s summary) string {
	if s.N == 0 {
		return "–"
	}
	return figure(s.Min) + "–" + figure(s.Max)
}

// times formats mpgo's figure over the baseline's: above 1 for a time
// means mpgo is slower, below 1 for a bandwidth means it is slower.
func times(a, b summary) string {
	x, ok := ratio(a, b)
	if !ok {
		return "–"
	}
	return figure(x) + "×"
}

// paired formats the median of ratios taken repetition by repetition.
func paired(s summary) string {
	if !s.valid() {
		return "–"
	}
	return figure(s.Median) + "×"
}

// noisyFigures lists, for row r, each series whose repetitions spread more
// than noiseThreshold, with its largest spread in percent.
func noisyFigures(res *result, r *row) []string {
	var out []string
	add := func(name string, ss ...summary) {
		worst := 0.0
		for _, s := range ss {
			if s.noisy() {
				worst = max(worst, s.spread())
			}
		}
		if worst > 0 {
			out = append(out, fmt.Sprintf("%s %.0f%%", name, 100*worst))
		}
	}
	var mine, theirs []summary
	for _, m := range res.bench.figures {
		if m == mMin || m == mMax {
			continue // the ranks' extremes: shown, but not what a row is judged by
		}
		mine, theirs = append(mine, r.mpgo[m]), append(theirs, r.mpi[m])
	}
	add("mpgo", mine...)
	add("chan", r.chanLat)
	add("copy", r.copyLat, r.copyBW)
	add(res.mpi, theirs...)
	return out
}

// noiseNote is the note column: "noisy: mpgo 34%, chan 25%" or nothing.
func noiseNote(res *result, r *row) string {
	n := noisyFigures(res, r)
	if len(n) == 0 {
		return ""
	}
	return "noisy: " + strings.Join(n, ", ")
}

// writeTable prints res as an aligned table with its header.
func writeTable(w io.Writer, res *result) error {
	b := res.bench
	fmt.Fprintf(w, "# mpbench %s: %s on %s, GOMAXPROCS %d, %d CPUs, %s %s/%s",
		b.name, b.origin, res.system, runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if res.load != "" {
		fmt.Fprintf(w, ", load average %s at start", res.load)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "# %s\n", res.machine)
	fmt.Fprintf(w, "# %s", b.def)
	if b.policy == bandwidthLoops {
		fmt.Fprintf(w, " (window %d)", res.window)
	}
	fmt.Fprintln(w)
	if res.reps == 1 {
		fmt.Fprintln(w, "# one repetition: no median, no min–max, no noise flag (-reps 5 for those)")
	} else {
		fmt.Fprintf(w, "# median of %d repetitions, min–max beside it; a row is noisy when (max-min)/median > %.0f%%\n",
			res.reps, 100*noiseThreshold)
	}
	if b.class == pointToPoint {
		fmt.Fprintln(w, "# baselines, same run: chan = Go channel ping-pong of the []byte, one way; copy = copy() of the same size")
		fmt.Fprintln(w, "# vs X = mpgo's figure / X's (times: above 1 is slower; MB/s: below 1 is slower); vs chan and vs copy are")
		fmt.Fprintln(w, "# medians of the ratios of each repetition, whose baseline ran right after mpgo's figure")
	}
	for _, n := range res.notes {
		fmt.Fprintf(w, "# %s\n", n)
	}
	// Every column is right-aligned, but the note, which trails the last
	// tab and so is no column of tabwriter's.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	cols := columns(res)
	for _, c := range cols {
		fmt.Fprintf(tw, "%s\t", c.head)
	}
	fmt.Fprintln(tw, "  note")
	noisy := 0
	for i := range res.rows {
		r := &res.rows[i]
		for _, c := range cols {
			fmt.Fprintf(tw, "%s\t", c.cell(r))
		}
		note := noiseNote(res, r)
		if note != "" {
			noisy++
			note = "  " + note
		}
		fmt.Fprintln(tw, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if noisy > 0 {
		fmt.Fprintf(w, "# %d of %d rows noisy: more -reps, or a quieter machine, would tighten them\n", noisy, len(res.rows))
	}
	_, err := fmt.Fprintln(w)
	return err
}

// csvHeader is the first line of --csv output: one line per figure, in
// long form, so that every benchmark fits one file.
var csvHeader = []string{"benchmark", "origin", "ranks", "bytes", "iterations", "warmup",
	"series", "metric", "unit", "median", "min", "max", "reps", "spread", "noisy"}

// writeCSV writes every figure of every result: the series is "mpgo",
// "chan", "copy" or the MPI library's name; and the paired ratios, series
// "mpgo/chan" and "mpgo/copy" in unit "ratio".
func writeCSV(w io.Writer, results []*result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for _, res := range results {
		b := res.bench
		for i := range res.rows {
			r := &res.rows[i]
			row := func(series string, m metric, unit string, s summary) error {
				if s.N == 0 {
					return nil
				}
				f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
				return cw.Write([]string{b.name, b.origin, strconv.Itoa(res.ranks), strconv.Itoa(r.plan.Size),
					strconv.Itoa(r.plan.Iters), strconv.Itoa(r.plan.Skip), series, m.String(), unit,
					f(s.Median), f(s.Min), f(s.Max), strconv.Itoa(s.N), f(s.spread()), strconv.FormatBool(s.noisy())})
			}
			line := func(series string, m metric, s summary) error { return row(series, m, m.unit(), s) }
			for _, m := range b.figures {
				if err := line("mpgo", m, r.mpgo[m]); err != nil {
					return err
				}
			}
			if err := line("chan", mLat, r.chanLat); err != nil {
				return err
			}
			if err := line("copy", mLat, r.copyLat); err != nil {
				return err
			}
			if err := line("copy", mBW, r.copyBW); err != nil {
				return err
			}
			for _, m := range b.figures {
				if err := line(res.mpi, m, r.mpi[m]); err != nil {
					return err
				}
			}
			// The paired ratios the tables show.
			if err := row("mpgo/chan", mLat, "ratio", r.vsChan); err != nil {
				return err
			}
			if err := row("mpgo/copy", mLat, "ratio", r.vsCopyLat); err != nil {
				return err
			}
			if err := row("mpgo/copy", mBW, "ratio", r.vsCopyBW); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
