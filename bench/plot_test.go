package bench

import (
	"bytes"
	"encoding/xml"
	"testing"
	"time"
)

// svgPoints parses an SVG as XML and counts, per system, its series and
// its points per panel (metric); legend lists the legend's systems.
func svgPoints(t *testing.T, svg []byte) (series map[string]int, points map[string]map[string]int, legend []string) {
	t.Helper()
	series, points = map[string]int{}, map[string]map[string]int{}
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() == "EOF" {
				return
			}
			t.Fatalf("the SVG is not XML: %v", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		attr := map[string]string{}
		for _, a := range el.Attr {
			attr[a.Name.Local] = a.Value
		}
		switch {
		case el.Name.Local == "g" && attr["class"] == "series":
			series[attr["data-system"]]++
		case el.Name.Local == "g" && attr["class"] == "legend-item":
			legend = append(legend, attr["data-system"])
		case el.Name.Local == "circle" && attr["class"] == "point":
			if points[attr["data-system"]] == nil {
				points[attr["data-system"]] = map[string]int{}
			}
			points[attr["data-system"]][attr["data-metric"]]++
		}
	}
}

func TestWritePlot(t *testing.T) {
	var pts []Stats
	for i, sys := range []string{"idemgate", "etcd", "redis"} {
		for j, c := range SweepClients {
			pts = append(pts, Stats{System: sys, Clients: c, OpsPerSec: float64((i + 1) * (j + 1) * 900),
				P99: time.Duration(i+1) * time.Duration(j+1) * 700 * time.Microsecond})
		}
	}
	pts = append(pts, Stats{System: "skipped", Skipped: "not installed"})
	var b bytes.Buffer
	if err := WritePlot(&b, "contention <&>", "sub", pts); err != nil {
		t.Fatal(err)
	}
	series, points, legend := svgPoints(t, b.Bytes())
	for _, sys := range []string{"idemgate", "etcd", "redis"} {
		if series[sys] != 2 {
			t.Errorf("%s: %d series, want 2 (one per panel)", sys, series[sys])
		}
		for _, m := range []string{"throughput", "p99"} {
			if points[sys][m] != len(SweepClients) {
				t.Errorf("%s %s: %d points, want %d", sys, m, points[sys][m], len(SweepClients))
			}
		}
	}
	if len(legend) != 3 || series["skipped"] != 0 {
		t.Errorf("legend %v, series %v: want the three systems that ran", legend, series)
	}
}
