package main

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Panel size of the --plot figure, one panel each for latency and
// bandwidth.
const (
	panelWidth  = 16 * vg.Centimeter
	panelHeight = 12 * vg.Centimeter
)

// errNothingToPlot is returned when no result has a positive figure at a
// positive size: a log-log plot would be empty.
var errNothingToPlot = errors.New("mpbench: nothing to plot on log-log axes (no figure at a size above 0 bytes)")

// writePlot draws the results as the OSU graphs do: latency (µs) and
// bandwidth (MB/s) against message size, log-log, with mpgo's curves
// solid, the MPI library's dotted in the same colour, and the baselines
// (channel ping-pong, copy()) dashed in grey. It writes SVG to w.
func writePlot(w io.Writer, results []*result) error {
	lat := newPanel("Latency", "latency (µs)")
	bw := newPanel("Bandwidth", "bandwidth (MB/s, 10⁶ B/s)")
	var err error
	drawn := map[*plot.Plot]int{}         // curves on each panel
	yrange := map[*plot.Plot][2]float64{} // their smallest and largest figure
	// curve adds one series unless it is empty or an earlier one failed,
	// and reports whether it drew anything.
	curve := func(p *plot.Plot, name string, pts plotter.XYs, c color.Color, dashes []vg.Length, marks bool) bool {
		if err != nil || len(pts) == 0 {
			return false
		}
		if err = addCurve(p, name, pts, c, dashes, marks); err != nil {
			return false
		}
		r, seen := yrange[p]
		if !seen {
			r = [2]float64{math.Inf(1), math.Inf(-1)}
		}
		for _, pt := range pts {
			r = [2]float64{min(r[0], pt.Y), max(r[1], pt.Y)}
		}
		drawn[p]++
		yrange[p] = r
		return true
	}
	grey, dotted := color.Gray{Y: 110}, []vg.Length{vg.Points(1), vg.Points(3)}
	var chanDone, copyLatDone, copyBWDone bool
	colour := 0
	for _, res := range results {
		b := res.bench
		c := plotutil.Color(colour)
		used := false
		for _, f := range []struct {
			m     metric
			panel *plot.Plot
		}{{mLat, lat}, {mBW, bw}} {
			if !b.has(f.m) {
				continue
			}
			m := f.m
			if curve(f.panel, "mpgo "+b.name, points(res, func(r *row) summary { return r.mpgo[m] }), c, nil, true) {
				used = true
				if res.mpi != "" {
					curve(f.panel, res.mpi+" "+b.name, points(res, func(r *row) summary { return r.mpi[m] }), c, dotted, true)
				}
			}
		}
		if b.chanBase && b.has(mLat) && !chanDone {
			chanDone = curve(lat, "Go channel ping-pong", points(res, func(r *row) summary { return r.chanLat }), grey, plotutil.Dashes(1), false)
		}
		if b.copyBase && b.has(mLat) && !b.has(mBW) && !copyLatDone {
			copyLatDone = curve(lat, "copy() of the message", points(res, func(r *row) summary { return r.copyLat }), grey, plotutil.Dashes(2), false)
		}
		if b.copyBase && b.has(mBW) && !copyBWDone {
			copyBWDone = curve(bw, "copy()", points(res, func(r *row) summary { return r.copyBW }), grey, plotutil.Dashes(2), false)
		}
		if used {
			colour++
		}
	}
	if err != nil {
		return fmt.Errorf("mpbench: plot: %w", err)
	}
	var panels []*plot.Plot
	for _, p := range []*plot.Plot{lat, bw} {
		if drawn[p] > 0 {
			makeRoom(p, drawn[p], yrange[p][0], yrange[p][1])
			panels = append(panels, p)
		}
	}
	if len(panels) == 0 {
		return errNothingToPlot
	}
	c := vgsvg.New(panelWidth*vg.Length(len(panels)), panelHeight)
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Centimeter / 2, PadTop: vg.Millimeter * 2,
		PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	for i, p := range panels {
		p.Draw(tiles.At(dc, i, 0))
	}
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("mpbench: plot: %w", err)
	}
	return nil
}

// makeRoom extends the y axis below the curves, whose figures span lo to
// hi, so that the legend, bottom right, sits over empty space: the curves
// rise to the right, latencies from their floor and bandwidths towards
// their ceiling.
func makeRoom(p *plot.Plot, entries int, lo, hi float64) {
	f := min(0.5, float64(entries+1)*0.045) // the legend's share of the height
	l, h := math.Log10(lo/1.2), math.Log10(hi*1.2)
	if h-l < 1 {
		l, h = l-0.5, h+0.5
	}
	p.Y.Min, p.Y.Max = math.Pow(10, h-(h-l)/(1-f)), math.Pow(10, h)
}

// newPanel returns an empty log-log panel with message size on x.
func newPanel(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "message size (bytes)"
	p.Y.Label.Text = ylabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Millimeter*2, vg.Millimeter*2
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Add(plotter.NewGrid())
	return p
}

// points returns the (size, median) points of a series that a log-log plot
// can show: positive sizes and figures.
func points(res *result, f func(r *row) summary) plotter.XYs {
	var pts plotter.XYs
	for i := range res.rows {
		r := &res.rows[i]
		if s := f(r); r.plan.Size > 0 && s.valid() {
			pts = append(pts, plotter.XY{X: float64(r.plan.Size), Y: s.Median})
		}
	}
	return pts
}

// addCurve adds a line (with point markers when marks) and its legend entry.
func addCurve(p *plot.Plot, name string, pts plotter.XYs, c color.Color, dashes []vg.Length, marks bool) error {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color, l.Dashes, l.Width = c, dashes, vg.Points(1.2)
	p.Add(l)
	if !marks {
		p.Legend.Add(name, l)
		return nil
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	s.Color, s.Radius = c, vg.Points(2)
	p.Add(s)
	p.Legend.Add(name, l, s)
	return nil
}

// sizeTicks marks message sizes at powers of two: labelled every factor
// of 16 (1, 16, 256, 4K, …), unlabelled between.
type sizeTicks struct{}

func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := int(math.Floor(math.Log2(lo))); e <= int(math.Ceil(math.Log2(hi))); e++ {
		v := math.Ldexp(1, e)
		if v < lo || v > hi {
			continue
		}
		t := plot.Tick{Value: v}
		if e%4 == 0 {
			t.Label = shortSize(e)
		}
		ts = append(ts, t)
	}
	return ts
}

// shortSize labels 2^e bytes: 1, 16, 256, 4K, 64K, 1M, 16M, 256M, 4G.
func shortSize(e int) string {
	switch {
	case e >= 30:
		return fmt.Sprintf("%dG", 1<<(e-30))
	case e >= 20:
		return fmt.Sprintf("%dM", 1<<(e-20))
	case e >= 10:
		return fmt.Sprintf("%dK", 1<<(e-10))
	}
	return fmt.Sprint(1 << e)
}
