package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"unicode/utf8"
)

// column is one column of a result's table.
type column struct {
	head  string
	cell  func(r *row) string
	width int // of the cells, beside the head's
}

// columns returns the table's columns for res: size and iterations, then
// for each figure its median and min–max over the repetitions, each
// baseline with the ratio of mpgo's figure to it, the MPI figure with the
// same ratio. (writeTable adds the note on noisy rows.)
func columns(res *result) []column {
	b := res.bench
	mpi := res.mpi
	cols := []column{
		{"bytes", func(r *row) string { return strconv.Itoa(r.plan.Size) }, widthCount + 1},
		{"iters", func(r *row) string { return strconv.Itoa(r.plan.Iters) }, widthCount - 2},
	}
	if b.has(mLat) {
		lat := "mpgo µs"
		if b.has(mMin) {
			lat = "mpgo avg µs"
		}
		cols = append(cols,
			column{lat, func(r *row) string { return num(r.mpgo[mLat]) }, widthFigure},
			column{"min–max", func(r *row) string { return span(r.mpgo[mLat]) }, widthSpan})
		if b.has(mMin) {
			cols = append(cols,
				column{"rank min µs", func(r *row) string { return num(r.mpgo[mMin]) }, widthFigure},
				column{"rank max µs", func(r *row) string { return num(r.mpgo[mMax]) }, widthFigure})
		}
		if b.chanBase {
			cols = append(cols,
				column{"chan µs", func(r *row) string { return num(r.chanLat) }, widthFigure},
				column{"vs chan", func(r *row) string { return paired(r.vsChan) }, widthRatio})
		}
		if b.copyBase && !b.has(mBW) {
			cols = append(cols,
				column{"copy µs", func(r *row) string { return num(r.copyLat) }, widthFigure},
				column{"vs copy", func(r *row) string { return paired(r.vsCopyLat) }, widthRatio})
		}
		if mpi != "" {
			cols = append(cols,
				column{mpi + " µs", func(r *row) string { return num(r.mpi[mLat]) }, widthFigure},
				column{"vs " + mpi, func(r *row) string { return times(r.mpgo[mLat], r.mpi[mLat]) }, widthRatio})
		}
	}
	if b.has(mBW) {
		cols = append(cols,
			column{"mpgo MB/s", func(r *row) string { return num(r.mpgo[mBW]) }, widthFigure},
			column{"min–max", func(r *row) string { return span(r.mpgo[mBW]) }, widthSpan})
		if b.copyBase {
			cols = append(cols,
				column{"copy MB/s", func(r *row) string { return num(r.copyBW) }, widthFigure},
				column{"vs copy", func(r *row) string { return paired(r.vsCopyBW) }, widthRatio})
		}
		if mpi != "" {
			cols = append(cols,
				column{mpi + " MB/s", func(r *row) string { return num(r.mpi[mBW]) }, widthFigure},
				column{"vs " + mpi, func(r *row) string { return times(r.mpgo[mBW], r.mpi[mBW]) }, widthRatio})
		}
	}
	if b.has(mRate) {
		cols = append(cols, column{"mpgo msgs/s", func(r *row) string { return num(r.mpgo[mRate]) }, widthFigure})
		if mpi != "" {
			cols = append(cols, column{mpi + " msgs/s", func(r *row) string { return num(r.mpi[mRate]) }, widthFigure})
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
	t, err := startTable(w, res)
	if err != nil {
		return err
	}
	for i := range res.rows {
		t.row(i)
	}
	return t.end()
}

// table prints a result's table as it is measured: the header first, then
// each row when it is final, then the footer. Columns have fixed widths,
// so that rows printed minutes apart line up; a wider cell pushes the
// rest of its row right.
type table struct {
	w      io.Writer
	res    *result
	cols   []column
	widths []int
	noisy  int
	err    error // the first write error
}

// Cell widths of the columns, beside their headers': sizes and counts,
// figures, min–max ranges, ratios.
const (
	widthCount  = 8
	widthFigure = 10
	widthSpan   = 17
	widthRatio  = 8
)

// startTable prints res's header (res.notes included) and the column
// heads.
func startTable(w io.Writer, res *result) (*table, error) {
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
	t := &table{w: w, res: res, cols: columns(res)}
	heads := make([]string, len(t.cols))
	for i, c := range t.cols {
		t.widths = append(t.widths, max(utf8.RuneCountInString(c.head), c.width))
		heads[i] = c.head
	}
	t.line(heads, "note")
	return t, t.err
}

// line prints one line: cells right-aligned in their columns, then the
// note (left-aligned, last).
func (t *table) line(cells []string, note string) {
	var sb strings.Builder
	for i, c := range cells {
		if i > 0 {
			sb.WriteString("  ")
		}
		sb.WriteString(strings.Repeat(" ", max(t.widths[i]-utf8.RuneCountInString(c), 0)))
		sb.WriteString(c)
	}
	if note != "" {
		sb.WriteString("  " + note)
	}
	sb.WriteByte('\n')
	if _, err := io.WriteString(t.w, sb.String()); err != nil && t.err == nil {
		t.err = err
	}
}

// row prints row i of the result.
func (t *table) row(i int) {
	r := &t.res.rows[i]
	cells := make([]string, len(t.cols))
	for j, c := range t.cols {
		cells[j] = c.cell(r)
	}
	note := noiseNote(t.res, r)
	if note != "" {
		t.noisy++
	}
	t.line(cells, note)
}

// end prints the footer, and returns the first write error.
func (t *table) end() error {
	if t.noisy > 0 {
		fmt.Fprintf(t.w, "# %d of %d rows noisy: more -reps, or a quieter machine, would tighten them\n", t.noisy, len(t.res.rows))
	}
	if _, err := fmt.Fprintln(t.w); err != nil && t.err == nil {
		t.err = err
	}
	return t.err
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
