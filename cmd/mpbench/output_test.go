package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
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
	checkSVG(t, buf.Bytes(), "mpgo latency", "MPICH latency", "mpgo bw", "mpgo bcast", "Go channel ping-pong", "copy()")
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

// TestPlotNothing: the barrier alone has no positive size to plot.
func TestPlotNothing(t *testing.T) {
	if err := writePlot(io.Discard, tinyResults(t, "barrier")); !errors.Is(err, errNothingToPlot) {
		t.Errorf("err = %v, want errNothingToPlot", err)
	}
}
