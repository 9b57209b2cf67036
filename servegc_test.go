package main

import (
	"runtime/debug"
	"testing"
)

// TestServeGC: serve runs the collector at serveGCPercent unless GOGC is
// set; a GOGC the operator set (the runtime applied it at start, as the
// test does by hand) is left in force, whatever it says.
func TestServeGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	cases := []struct {
		name     string
		env      map[string]string
		runtime  int // what the runtime applied from GOGC at start
		want     int
		wantLeft int // the percent in force afterwards
	}{
		{"unset", nil, 100, serveGCPercent, serveGCPercent},
		{"empty", map[string]string{"GOGC": ""}, 100, serveGCPercent, serveGCPercent},
		{"set to 150", map[string]string{"GOGC": "150"}, 150, 150, 150},
		{"set to the default", map[string]string{"GOGC": "100"}, 100, 100, 100},
		{"off", map[string]string{"GOGC": "off"}, -1, -1, -1},
		{"unparsable (the runtime took 100)", map[string]string{"GOGC": "fast please"}, 100, 100, 100},
		{"only GOMEMLIMIT", map[string]string{"GOMEMLIMIT": "1GiB"}, 100, serveGCPercent, serveGCPercent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			debug.SetGCPercent(c.runtime)
			got := setServeGC(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
			left := debug.SetGCPercent(c.runtime)
			if got != c.want || left != c.wantLeft {
				t.Fatalf("setServeGC = %d, left %d in force; want %d, %d", got, left, c.want, c.wantLeft)
			}
		})
	}
}
