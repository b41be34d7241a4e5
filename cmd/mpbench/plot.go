package main

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Sizes of the --plot figure: a panel each for latency and bandwidth, side
// by side, under a title and above their legends.
const (
	panelWidth  = 16 * vg.Centimeter
	panelHeight = 12 * vg.Centimeter
	titleHeight = 16 * vg.Millimeter
	figurePad   = 3 * vg.Millimeter
)

// zeroX is where a 0-byte point is drawn on the log size axis, which has
// no 0: at half a byte, below the 1-byte point, with the tick there
// labelled 0 (and the axis label saying so).
const zeroX = 0.5

// baselineReach is how far beyond mpgo's curves (and the MPI library's
// and the channel's) a panel's y axis stretches to show a baseline: a
// factor of 10. copy() of a few bytes takes nanoseconds, and of a cached
// buffer runs at hundreds of GB/s: an axis stretched to it would squash
// the curves it is there to judge into a band. Beyond the reach the
// baseline is clipped at the panel's edge, and its legend entry says so.
const baselineReach = 10

// newCanvas makes the figure's canvas: SVG.
var newCanvas = func(w, h vg.Length) vg.CanvasWriterTo { return vgsvg.New(w, h) }

// errNothingToPlot is returned when no result has a positive figure at a
// positive size: a log-log plot would be empty.
var errNothingToPlot = errors.New("mpbench: nothing to plot on log-log axes (no positive figure)")

// panel is one plot of the figure and what it needs besides: its legend
// (drawn under it, outside the axes), and the ranges of its curves.
type panel struct {
	p       *plot.Plot
	legend  plot.Legend // made by fit of entries
	entries []entry
	curves  int
	// main: the y range of the curves the axis must show; base: of the
	// baselines, shown as far as baselineReach; sizes: the x range.
	main, base, sizes [2]float64
	zero              bool // a 0-byte point is drawn at zeroX
	zeroLost          bool // a 0-byte figure of 0 (a bandwidth) could not be
}

// entry is one line of a panel's legend.
type entry struct {
	name     string
	thumbs   []plot.Thumbnailer
	baseline bool
}

func newRange() [2]float64 { return [2]float64{math.Inf(1), math.Inf(-1)} }

func widen(r [2]float64, pts plotter.XYs) [2]float64 {
	for _, pt := range pts {
		r = [2]float64{min(r[0], pt.Y), max(r[1], pt.Y)}
	}
	return r
}

// writePlot draws the results as the OSU graphs do: latency (µs) and
// bandwidth (MB/s) against message size, log-log, with mpgo's curves
// solid, the MPI library's dotted in the same colour, and the baselines
// (channel ping-pong, copy()) dashed in grey; a title names the
// benchmarks, ranks, mpgo's version, CPU, host and date. It writes SVG to
// w.
func writePlot(w io.Writer, results []*result) error {
	lat := newPanel("Latency", "latency (µs)")
	bw := newPanel("Bandwidth", "bandwidth (MB/s, 10⁶ B/s)")
	var err error
	// curve adds one series unless it is empty or an earlier one failed,
	// and reports whether it drew anything.
	curve := func(pn *panel, name string, res *result, f func(r *row) summary, c color.Color, dashes []vg.Length, marks, baseline bool) bool {
		pts, zero, lost := points(res, f)
		pn.zeroLost = pn.zeroLost || lost
		if err != nil || len(pts) == 0 || pts[len(pts)-1].X < 1 {
			return false // nothing, or a 0-byte point alone (a barrier): no curve against size
		}
		if err = addCurve(pn, name, pts, c, dashes, marks, baseline); err != nil {
			return false
		}
		pn.zero = pn.zero || zero
		for _, pt := range pts {
			pn.sizes = [2]float64{min(pn.sizes[0], pt.X), max(pn.sizes[1], pt.X)}
		}
		if baseline {
			pn.base = widen(pn.base, pts)
		} else {
			pn.main = widen(pn.main, pts)
			pn.curves++
		}
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
			panel *panel
		}{{mLat, lat}, {mBW, bw}} {
			if !b.has(f.m) {
				continue
			}
			m := f.m
			if curve(f.panel, "mpgo "+b.name, res, func(r *row) summary { return r.mpgo[m] }, c, nil, true, false) {
				used = true
				if res.mpi != "" {
					curve(f.panel, res.mpi+" "+b.name, res, func(r *row) summary { return r.mpi[m] }, c, dotted, true, false)
				}
			}
		}
		if b.chanBase && b.has(mLat) && !chanDone {
			chanDone = curve(lat, "Go channel ping-pong", res, func(r *row) summary { return r.chanLat }, grey, plotutil.Dashes(1), false, false)
		}
		if b.copyBase && b.has(mLat) && !b.has(mBW) && !copyLatDone {
			copyLatDone = curve(lat, "copy() of the message", res, func(r *row) summary { return r.copyLat }, grey, plotutil.Dashes(2), false, true)
		}
		if b.copyBase && b.has(mBW) && !copyBWDone {
			copyBWDone = curve(bw, "copy()", res, func(r *row) summary { return r.copyBW }, grey, plotutil.Dashes(2), false, true)
		}
		if used {
			colour++
		}
	}
	if err != nil {
		return fmt.Errorf("mpbench: plot: %w", err)
	}
	var panels []*panel
	for _, pn := range []*panel{lat, bw} {
		if pn.curves > 0 {
			pn.fit()
			panels = append(panels, pn)
		}
	}
	if len(panels) == 0 {
		return errNothingToPlot
	}
	// The legends go under the panels, outside the axes, in a strip as
	// tall as the longest.
	var legendHeight vg.Length
	for _, pn := range panels {
		legendHeight = max(legendHeight, pn.legend.Rectangle(draw.Canvas{}).Size().Y)
	}
	legendHeight += 2 * figurePad
	width := panelWidth * vg.Length(len(panels))
	height := titleHeight + panelHeight + legendHeight
	c := newCanvas(width, height)
	dc := draw.New(c)
	drawTitle(dc, results, height)
	for i, pn := range panels {
		x0 := panelWidth * vg.Length(i)
		area := draw.Canvas{Canvas: c, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x0 + figurePad, Y: legendHeight},
			Max: vg.Point{X: x0 + panelWidth - figurePad, Y: legendHeight + panelHeight},
		}}
		pn.p.Draw(area)
		// Under the panel's data area: its left edge is where the y axis
		// ends, found as the plot lays itself out.
		left := pn.p.DataCanvas(area).Min.X
		pn.legend.Draw(draw.Canvas{Canvas: c, Rectangle: vg.Rectangle{
			Min: vg.Point{X: left, Y: figurePad},
			Max: vg.Point{X: x0 + panelWidth - figurePad, Y: legendHeight - figurePad},
		}})
	}
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("mpbench: plot: %w", err)
	}
	return nil
}

// fit sets the panel's y range to its curves', stretched towards the
// baselines by at most baselineReach, with a margin; marks the baselines
// it clips; and labels the size axis for a 0-byte point.
func (pn *panel) fit() {
	lo, hi := pn.main[0], pn.main[1]
	if pn.base[0] <= pn.base[1] {
		lo = min(lo, max(pn.base[0], lo/baselineReach))
		hi = max(hi, min(pn.base[1], hi*baselineReach))
	}
	lo, hi = lo/1.3, hi*1.3
	if math.Log10(hi/lo) < 1 { // less than a decade: give the curves room
		mid := math.Sqrt(lo * hi)
		lo, hi = mid/math.Sqrt(10), mid*math.Sqrt(10)
	}
	pn.p.Y.Min, pn.p.Y.Max = lo, hi
	pn.p.X.Min, pn.p.X.Max = pn.sizes[0]/1.2, pn.sizes[1]*1.2
	clipped := pn.base[0] < lo || pn.base[1] > hi
	for _, e := range pn.entries {
		if e.baseline && clipped {
			e.name += " (clipped at the axis)"
		}
		pn.legend.Add(e.name, e.thumbs...)
	}
	var notes []string
	if pn.zero {
		pn.p.X.Tick.Marker = sizeTicks{zero: true}
		notes = append(notes, "0 B drawn at ½ B")
	}
	if pn.zeroLost {
		notes = append(notes, "0 B: no bandwidth to draw")
	}
	if len(notes) > 0 {
		pn.p.X.Label.Text = "message size (bytes; " + strings.Join(notes, "; ") + ")"
	}
}

// drawTitle writes the figure's title at the top of dc (height tall): the
// benchmarks, then where they ran: ranks, mpgo's version, CPU, host, date.
func drawTitle(dc draw.Canvas, results []*result, height vg.Length) {
	var names, systems []string
	for _, res := range results {
		names = append(names, res.bench.name)
		if !slices.Contains(systems, res.system) {
			systems = append(systems, res.system)
		}
	}
	sty := plot.New().Title.TextStyle
	sty.Font.Size = vg.Points(12)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	small := sty
	small.Font.Size = vg.Points(9)
	x := figurePad * 2
	dc.FillText(sty, vg.Point{X: x, Y: height - figurePad - sty.Font.Size}, "mpbench: "+strings.Join(names, ", "))
	dc.FillText(small, vg.Point{X: x, Y: height - titleHeight + figurePad/2},
		strings.Join(systems, "; ")+" — "+results[0].machine.String())
}

// newPanel returns an empty log-log panel with message size on x.
func newPanel(title, ylabel string) *panel {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "message size (bytes)"
	p.Y.Label.Text = ylabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.TextStyle.Font.Size = vg.Points(8)
	l.Padding = vg.Points(1)
	return &panel{p: p, legend: l, main: newRange(), base: newRange(), sizes: newRange()}
}

// points returns the (size, median) points of a series that a log-log plot
// can show: positive figures, a 0-byte one at zeroX (zero reports one).
// lost reports a 0-byte row whose figure is 0, which no log axis shows.
func points(res *result, f func(r *row) summary) (pts plotter.XYs, zero, lost bool) {
	for i := range res.rows {
		r := &res.rows[i]
		s := f(r)
		if !s.valid() {
			lost = lost || (r.plan.Size == 0 && s.N > 0)
			continue
		}
		x := float64(r.plan.Size)
		if x == 0 {
			x, zero = zeroX, true
		}
		pts = append(pts, plotter.XY{X: x, Y: s.Median})
	}
	return pts, zero, lost
}

// addCurve adds a line (with point markers when marks) and its legend entry.
func addCurve(pn *panel, name string, pts plotter.XYs, c color.Color, dashes []vg.Length, marks, baseline bool) error {
	p := pn.p
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color, l.Dashes, l.Width = c, dashes, vg.Points(1.2)
	p.Add(l)
	if !marks {
		pn.entries = append(pn.entries, entry{name, []plot.Thumbnailer{l}, baseline})
		return nil
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	s.Color, s.Radius = c, vg.Points(2)
	p.Add(s)
	pn.entries = append(pn.entries, entry{name, []plot.Thumbnailer{l, s}, baseline})
	return nil
}

// sizeTicks marks message sizes at powers of two: labelled every factor
// of 16 (1, 16, 256, 4K, …), unlabelled between; with zero, zeroX is
// labelled 0.
type sizeTicks struct{ zero bool }

func (st sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0 && hi >= lo) || math.IsInf(hi, 0) {
		return nil // no log axis
	}
	var ts []plot.Tick
	for e := int(math.Floor(math.Log2(lo))); e <= int(math.Ceil(math.Log2(hi))); e++ {
		v := math.Ldexp(1, e)
		if v < lo || v > hi || e < 0 && (!st.zero || v != zeroX) {
			continue
		}
		if e < 0 {
			ts = append(ts, plot.Tick{Value: v, Label: "0"})
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
