package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// peerColors keeps each peer's colour the same in every panel.
var peerColors = map[string]color.Color{
	Graft:        color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	Conventional: color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	Floor:        color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
}

// WritePlot draws latency against percentile, one panel per corpus and
// mode, one line per peer, and writes it as a PNG. The x axis counts nines
// (90%, 99%, 99.9%...) so the tail gets room; the y axis is logarithmic.
func WritePlot(path string, rows []Row) error {
	type panel struct {
		corpus, mode string
		rows         []Row
	}
	var panels []*panel
	for _, r := range rows {
		if len(r.Percentiles) == 0 {
			continue
		}
		var p *panel
		for _, q := range panels {
			if q.corpus == r.Corpus && q.mode == r.Mode {
				p = q
			}
		}
		if p == nil {
			p = &panel{corpus: r.Corpus, mode: r.Mode}
			panels = append(panels, p)
		}
		p.rows = append(p.rows, r)
	}
	if len(panels) == 0 {
		return fmt.Errorf("report: no latency curves to plot")
	}
	cols := min(2, len(panels))
	nrows := (len(panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, nrows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, pn := range panels {
		p := plot.New()
		title := fmt.Sprintf("%s, %s loop", pn.corpus, pn.mode)
		if pn.mode == "open" {
			title += fmt.Sprintf(" at %.0f req/s", pn.rows[0].Rate)
		} else {
			title += fmt.Sprintf(", %d workers", pn.rows[0].Concurrency)
		}
		p.Title.Text = title
		p.X.Label.Text = "percentile"
		p.Y.Label.Text = "latency (µs)"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.X.Tick.Marker = plot.ConstantTicks{
			{Value: 0, Label: "0%"}, {Value: 1, Label: "90%"}, {Value: 2, Label: "99%"},
			{Value: 3, Label: "99.9%"}, {Value: 4, Label: "99.99%"}, {Value: 5, Label: "99.999%"},
		}
		p.Add(plotter.NewGrid())
		// Percentile curves rise to the right: the bottom right stays empty.
		p.Legend.Top = false
		p.Legend.Left = false
		for _, r := range pn.rows {
			xys := make(plotter.XYs, 0, len(r.Percentiles))
			for _, pt := range r.Percentiles {
				if pt.US <= 0 {
					continue
				}
				xys = append(xys, plotter.XY{X: nines(pt.P), Y: float64(pt.US)})
			}
			if len(xys) == 0 {
				continue
			}
			l, err := plotter.NewLine(xys)
			if err != nil {
				return fmt.Errorf("report: plot %s: %w", r.Peer, err)
			}
			l.Color = peerColor(r.Peer)
			l.Width = vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s (%.0f req/s)", r.Peer, r.RPS), l)
		}
		grid[i/cols][i%cols] = p
	}
	// Align needs every cell: fill a missing last cell with an empty plot.
	for _, row := range grid {
		for j := range row {
			if row[j] == nil {
				row[j] = plot.New()
				row[j].HideAxes()
			}
		}
	}
	w, h := vg.Length(cols)*11*vg.Centimeter, vg.Length(nrows)*8*vg.Centimeter
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: nrows, Cols: cols, PadX: vg.Centimeter, PadY: vg.Centimeter,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 8}
	canvases := plot.Align(grid, tiles, dc)
	for i := range grid {
		for j := range grid[i] {
			grid[i][j].Draw(canvases[i][j])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	return f.Close()
}

// nines maps a percentile to how many nines it has: 90 -> 1, 99 -> 2.
func nines(p float64) float64 {
	if p >= 100 {
		return 6
	}
	return -math.Log10(1 - p/100)
}

func peerColor(peer string) color.Color {
	if c, ok := peerColors[strings.ToLower(peer)]; ok {
		return c
	}
	return color.Black
}
