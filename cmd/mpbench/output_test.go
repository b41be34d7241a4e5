package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// tinyResults measures a latency, a bandwidth and a collective benchmark
// small.
func tinyResults(t *testing.T, names ...string) []*result {
	t.Helper()
	o := tinyOptions(t)
	r := &runner{o: o, be: goroutines{}, prog: &progress{}}
	var out []*result
	for _, n := range names {
		res, err := r.run(context.Background(), find(n))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res)
	}
	return out
}

func TestCSV(t *testing.T) {
	results := tinyResults(t, "latency", "bw", "allreduce", "pingpong")
	var buf bytes.Buffer
	if err := writeCSV(&buf, results); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v\n%s", err, buf.String())
	}
	if !slices.Equal(recs[0], csvHeader) {
		t.Fatalf("header %q, want %q", recs[0], csvHeader)
	}
	col := func(name string) int { return slices.Index(csvHeader, name) }
	// Figures per row: latency: mpgo lat, chan, copy lat+bw (none at 0
	// bytes), ratios to chan and copy (none at 0 bytes); bw: mpgo bw, copy
	// lat+bw, ratio to copy; allreduce: lat, min, max; pingpong: lat, bw,
	// chan, copy lat+bw (none at 0 bytes), ratios to chan, copy lat and
	// copy bw (none at 0 bytes).
	want := 8*6 - 3 + 7*4 + 5*3 + 8*8 - 4
	if got := len(recs) - 1; got != want {
		t.Errorf("%d records, want %d", got, want)
	}
	series := map[string]bool{}
	for _, rec := range recs[1:] {
		if len(rec) != len(csvHeader) {
			t.Fatalf("record %q has %d fields", rec, len(rec))
		}
		series[rec[col("series")]] = true
		for _, f := range []string{"ranks", "bytes", "iterations", "warmup", "reps"} {
			if _, err := strconv.Atoi(rec[col(f)]); err != nil {
				t.Errorf("%s %q: %v", f, rec[col(f)], err)
			}
		}
		var vals []float64
		for _, f := range []string{"min", "median", "max"} {
			v, err := strconv.ParseFloat(rec[col(f)], 64)
			if err != nil || v < 0 {
				t.Errorf("%s %q in %q", f, rec[col(f)], rec)
			}
			vals = append(vals, v)
		}
		if !(vals[0] <= vals[1] && vals[1] <= vals[2]) {
			t.Errorf("min, median, max out of order in %q", rec)
		}
		if _, err := strconv.ParseBool(rec[col("noisy")]); err != nil {
			t.Errorf("noisy %q", rec[col("noisy")])
		}
	}
	for _, s := range []string{"mpgo", "chan", "copy", "mpgo/chan", "mpgo/copy"} {
		if !series[s] {
			t.Errorf("no %s series", s)
		}
	}
}

// TestCSVToStdout: --csv - puts the CSV alone on stdout.
func TestCSVToStdout(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), append([]string{"barrier", "--csv", "-"}, tiny...), &stdout, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&stdout).ReadAll()
	if err != nil {
		t.Fatalf("stdout is not CSV: %v\n%s", err, stdout.String())
	}
	if len(recs) != 1+3 || recs[1][0] != "barrier" {
		t.Errorf("records: %q", recs)
	}
}

func TestPlot(t *testing.T) {
	results := tinyResults(t, "latency", "bw", "bcast")
	// An MPI series, as --vs-mpi adds, drawn dotted beside mpgo's.
	results[0].mpi = "MPICH"
	for i := range results[0].rows {
		results[0].rows[i].mpi[mLat] = summarize([]float64{1, 2})
	}
	var buf bytes.Buffer
	if err := writePlot(&buf, results); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, buf.Bytes(), "mpgo latency", "MPICH latency", "mpgo bw", "mpgo bcast", "Go channel ping-pong", "copy()",
		"mpbench: latency, bw, bcast", "3 goroutine ranks", "mpgo v", "host ", // the title
		"0 B drawn at ½ B") // latency's 0-byte row
}

// A panel's y axis follows mpgo's curves: a baseline far below (copy() of
// a few bytes) stretches it by at most baselineReach, is clipped beyond,
// and its legend entry says so; one within reach is shown whole.
func TestPlotBaselineReach(t *testing.T) {
	res := &result{bench: find("latency"), rows: make([]row, 3)}
	for i, size := range []int{0, 8, 64} {
		res.rows[i].plan.Size = size
	}
	fill := func(f func(r *row) *summary, v ...float64) {
		for i := range res.rows {
			*f(&res.rows[i]) = summarize([]float64{v[i]})
		}
	}
	fill(func(r *row) *summary { return &r.mpgo[mLat] }, 1, 1.5, 2)
	for _, tt := range []struct {
		copies  []float64
		clipped bool
	}{
		{[]float64{1e-4, 1e-4, 1e-4}, true},
		{[]float64{0.3, 0.3, 0.4}, false},
	} {
		fill(func(r *row) *summary { return &r.copyLat }, tt.copies...)
		pn := newPanel("Latency", "µs")
		for _, c := range []struct {
			name     string
			f        func(r *row) summary
			baseline bool
		}{{"mpgo latency", func(r *row) summary { return r.mpgo[mLat] }, false}, {"copy()", func(r *row) summary { return r.copyLat }, true}} {
			pts, _, _ := points(res, c.f)
			if err := addCurve(pn, c.name, pts, color.Black, nil, false, c.baseline); err != nil {
				t.Fatal(err)
			}
			if c.baseline {
				pn.base = widen(pn.base, pts)
			} else {
				pn.main = widen(pn.main, pts)
				pn.curves++
			}
			pn.sizes = [2]float64{zeroX, 64}
		}
		pn.fit()
		lo := pn.p.Y.Min
		if want := 1.0 / baselineReach / 1.3; tt.clipped && math.Abs(lo-want) > 1e-9 {
			t.Errorf("copies %v: y from %v, want %v (mpgo's floor over baselineReach, with the margin)", tt.copies, lo, want)
		}
		if !tt.clipped && lo > tt.copies[0] {
			t.Errorf("copies %v: y from %v cuts the baseline", tt.copies, lo)
		}
		var doc bytes.Buffer
		c := vgsvg.New(10*vg.Centimeter, 10*vg.Centimeter)
		pn.legend.Draw(draw.New(c))
		if _, err := c.WriteTo(&doc); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(doc.String(), "clipped at the axis"); got != tt.clipped {
			t.Errorf("copies %v: legend says clipped %v, want %v", tt.copies, got, tt.clipped)
		}
	}
}

// The 0-byte point sits at zeroX, labelled 0 on the size axis.
func TestPlotZero(t *testing.T) {
	res := &result{bench: find("latency"), rows: make([]row, 2)}
	res.rows[1].plan.Size = 4
	for i := range res.rows {
		res.rows[i].mpgo[mLat] = summarize([]float64{2})
		res.rows[i].mpgo[mBW] = summarize([]float64{0})
	}
	pts, zero, lost := points(res, func(r *row) summary { return r.mpgo[mLat] })
	if len(pts) != 2 || pts[0].X != zeroX || !zero || lost {
		t.Errorf("latency points %v, zero %v, lost %v", pts, zero, lost)
	}
	pts, zero, lost = points(res, func(r *row) summary { return r.mpgo[mBW] })
	if len(pts) != 0 || zero || !lost {
		t.Errorf("0-byte bandwidth: points %v, zero %v, lost %v; want it reported lost", pts, zero, lost)
	}
	var labels []string
	for _, tk := range (sizeTicks{zero: true}).Ticks(zeroX/1.3, 64) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"0", "1", "16"}; !slices.Equal(labels, want) {
		t.Errorf("tick labels %q, want %q", labels, want)
	}
}

// checkSVG parses doc as XML, checks its root is an svg element and that
// its text holds each of texts.
func checkSVG(t *testing.T, doc []byte, texts ...string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var root string
	var text strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			text.Write(tok)
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	for _, s := range texts {
		if !strings.Contains(text.String(), s) {
			t.Errorf("SVG has no text %q", s)
		}
	}
}

func TestPlotFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.svg")
	csvPath := filepath.Join(t.TempDir(), "out.csv")
	var stdout bytes.Buffer
	args := append([]string{"pingpong", "--plot", path, "--csv", csvPath}, tiny...)
	if err := run(context.Background(), args, &stdout, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, doc, "Latency", "Bandwidth", "mpgo pingpong")
	if _, err := os.Stat(csvPath); err != nil {
		t.Error(err)
	}
	if !strings.Contains(stdout.String(), "IMB-MPI1 PingPong") {
		t.Errorf("no table on stdout:\n%s", stdout.String())
	}
}

// TestPlotNothing: the barrier alone has no positive size to plot (its
// 0-byte point alone is no curve against size).
func TestPlotNothing(t *testing.T) {
	if err := writePlot(io.Discard, tinyResults(t, "barrier")); !errors.Is(err, errNothingToPlot) {
		t.Errorf("err = %v, want errNothingToPlot", err)
	}
}
