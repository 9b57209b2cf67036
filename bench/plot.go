package bench

// --plot: one scenario swept over client counts on every system, drawn as
// a hand-written SVG (two panels: throughput and p99 against clients).

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// SweepClients are the client counts a plot sweeps.
var SweepClients = []int{1, 4, 16, 64, 256}

// PlotScenarios are the scenarios a plot can sweep: those every System runs.
var PlotScenarios = []string{"contention", "kv", "flashsale"}

// Sweep runs scenario on sys at each of SweepClients clients (kv: its
// SETNX half).
func Sweep(sys System, scenario string, cfg RunConfig, lc LockConfig) []Stats {
	var out []Stats
	for _, n := range SweepClients {
		cfg.Clients = n
		out = append(out, RunOn(sys, scenario, cfg, lc)[0])
	}
	return out
}

// plotPanel is one of the two panels: a metric against clients.
type plotPanel struct {
	metric, label string
	value         func(Stats) float64
	tick          func(float64) string
}

var plotPanels = []plotPanel{
	{"throughput", "ops/s (log scale)", func(s Stats) float64 { return s.OpsPerSec }, fmtRate},
	{"p99", "p99 latency, ms (log scale)", func(s Stats) float64 { return float64(s.P99) / 1e6 }, func(v float64) string { return fmtNum(v) }},
}

var plotColors = map[string]string{"idemgate": "#1f6fb4", "etcd": "#2a9d3a", "redis": "#d62728"}

const (
	plotW, plotH       = 1000, 470
	panelW, panelH     = 400, 300
	panelTop, panelGap = 70, 100
	panelLeft          = 80
)

// WritePlot draws points (Sweep results of several systems) as an SVG:
// throughput and p99 against clients, log scales, one series per system
// with a point per client count, and a legend. Skipped measurements and
// zero values (nothing to put on a log scale) are left out.
func WritePlot(w io.Writer, title, subtitle string, points []Stats) error {
	var systems []string
	bySystem := map[string][]Stats{}
	for _, p := range points {
		if p.Skipped != "" || p.Clients < 1 {
			continue
		}
		if _, ok := bySystem[p.System]; !ok {
			systems = append(systems, p.System)
		}
		bySystem[p.System] = append(bySystem[p.System], p)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", panelLeft, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="44" fill="#555">%s</text>`+"\n", panelLeft, esc(subtitle))
	xlo, xhi := float64(SweepClients[0]), float64(SweepClients[len(SweepClients)-1])
	for _, p := range points {
		if p.Clients > 0 {
			xlo, xhi = math.Min(xlo, float64(p.Clients)), math.Max(xhi, float64(p.Clients))
		}
	}
	for i, panel := range plotPanels {
		left := float64(panelLeft + i*(panelW+panelGap))
		var vals []float64
		for _, s := range systems {
			for _, p := range bySystem[s] {
				if v := panel.value(p); v > 0 {
					vals = append(vals, v)
				}
			}
		}
		ylo, yhi := decadeBounds(vals)
		x := func(c float64) float64 { return left + logPos(c, xlo, xhi)*panelW }
		y := func(v float64) float64 { return panelTop + (1-logPos(v, ylo, yhi))*panelH }
		fmt.Fprintf(&b, `<g class="panel" data-metric="%s">`+"\n", panel.metric)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", left, panelTop, panelW, panelH)
		for _, c := range SweepClients {
			fmt.Fprintf(&b, `<line class="tick" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`, x(float64(c)), panelTop, x(float64(c)), panelTop+panelH)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(float64(c)), panelTop+panelH+16, c)
		}
		for _, v := range logTicks(ylo, yhi) {
			fmt.Fprintf(&b, `<line class="tick" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, left, y(v), left+panelW, y(v))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(v)+4, panel.tick(v))
		}
		fmt.Fprintf(&b, `<text class="label" x="%.1f" y="%d" text-anchor="middle">clients (log scale)</text>`+"\n", left+panelW/2, panelTop+panelH+36)
		fmt.Fprintf(&b, `<text class="label" transform="translate(%.1f %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n",
			left-56, panelTop+panelH/2, esc(panel.label))
		for si, s := range systems {
			color := seriesColor(s, si)
			var line []string
			var dots strings.Builder
			for _, p := range bySystem[s] {
				v := panel.value(p)
				if v <= 0 {
					continue
				}
				px, py := x(float64(p.Clients)), y(v)
				line = append(line, fmt.Sprintf("%.1f,%.1f", px, py))
				fill := color
				if p.Check != "" && !p.CheckOK {
					fill = "white" // a point whose check failed is drawn hollow
				}
				fmt.Fprintf(&dots, `<circle class="point" data-system="%s" data-metric="%s" data-clients="%d" data-value="%g" cx="%.1f" cy="%.1f" r="3.5" fill="%s" stroke="%s"><title>%s, %d clients: %s</title></circle>`+"\n",
					esc(s), panel.metric, p.Clients, v, px, py, fill, color, esc(s), p.Clients, panel.tick(v))
			}
			fmt.Fprintf(&b, `<g class="series" data-system="%s">`+"\n", esc(s))
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(line, " "), color)
			b.WriteString(dots.String())
			b.WriteString("</g>\n")
		}
		b.WriteString("</g>\n")
	}
	b.WriteString(`<g class="legend">` + "\n")
	for si, s := range systems {
		lx := float64(panelLeft + si*180)
		ly := float64(plotH - 24)
		fmt.Fprintf(&b, `<g class="legend-item" data-system="%s"><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/><text x="%.1f" y="%.1f">%s</text></g>`+"\n",
			esc(s), lx, ly, lx+24, ly, seriesColor(s, si), lx+30, ly+4, esc(s))
	}
	b.WriteString("</g>\n</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func seriesColor(system string, i int) string {
	if c, ok := plotColors[system]; ok {
		return c
	}
	return []string{"#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}[i%4]
}

// logPos is where v lies between lo and hi on a log scale, 0-1.
func logPos(v, lo, hi float64) float64 {
	if hi <= lo {
		return 0.5
	}
	return (math.Log(v) - math.Log(lo)) / (math.Log(hi) - math.Log(lo))
}

// decadeBounds widens the values' range to whole powers of ten.
func decadeBounds(vals []float64) (float64, float64) {
	if len(vals) == 0 {
		return 1, 10
	}
	lo := math.Pow(10, math.Floor(math.Log10(slices.Min(vals))))
	hi := math.Pow(10, math.Ceil(math.Log10(slices.Max(vals))))
	if hi <= lo {
		hi = lo * 10
	}
	return lo, hi
}

// logTicks are 1, 2 and 5 times each power of ten from lo to hi.
func logTicks(lo, hi float64) []float64 {
	var out []float64
	for d := lo; d <= hi*1.0001; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := d * m; v <= hi*1.0001 {
				out = append(out, v)
			}
		}
	}
	return out
}

func fmtRate(v float64) string {
	if v >= 1000 {
		return fmtNum(v/1000) + "k"
	}
	return fmtNum(v)
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// esc escapes text and attribute values.
func esc(s string) string { return html.EscapeString(s) }
