package bench

import (
	"fmt"
	"io"
	"time"
)

// IncidentColumn is one run of the incident, as the demo's table shows it.
type IncidentColumn struct {
	Title   string
	Res     IncidentResult
	Charges map[string]int // upstream charges by user
	Waits   float64        // requests that waited for the first (on_in_flight: wait)
	Gateway bool           // the run went through idemgate
}

// WriteIncidentTable prints the runs side by side and reports whether the
// last run (through idemgate) charged every user exactly once.
func WriteIncidentTable(out io.Writer, users int, cols []IncidentColumn) bool {
	type row struct {
		name string
		get  func(c IncidentColumn) string
	}
	num := func(v int64) string { return fmt.Sprint(v) }
	gw := func(c IncidentColumn, v string) string {
		if !c.Gateway {
			return "-"
		}
		return v
	}
	double := func(c IncidentColumn) (doubles, none, total int) {
		for u := 0; u < users; u++ {
			n := c.Charges[fmt.Sprintf("user-%04d", u)]
			total += n
			switch {
			case n > 1:
				doubles++
			case n == 0:
				none++
			}
		}
		return
	}
	rows := []row{
		{"users", func(c IncidentColumn) string { return num(int64(c.Res.Users)) }},
		{"requests sent", func(c IncidentColumn) string { return num(c.Res.Requests) }},
		{"upstream charges", func(c IncidentColumn) string { _, _, t := double(c); return num(int64(t)) }},
		{"replays", func(c IncidentColumn) string { return gw(c, num(c.Res.Replays)) }},
		{"409 in progress", func(c IncidentColumn) string { return gw(c, num(c.Res.InProgress)) }},
		{"waits", func(c IncidentColumn) string { return gw(c, num(int64(c.Waits))) }},
		{"timeouts, retried", func(c IncidentColumn) string { return num(c.Res.Timeouts) }},
		{"unavailable, retried", func(c IncidentColumn) string { return num(c.Res.Unavailable) }},
		{"outcome unknown", func(c IncidentColumn) string { return gw(c, num(c.Res.Unknown)) }},
		{"  checked with bank", func(c IncidentColumn) string { return gw(c, num(c.Res.Reconciled)) }},
		{"  paid again, new key", func(c IncidentColumn) string { return gw(c, num(c.Res.PaidAgain)) }},
		{"users double-charged", func(c IncidentColumn) string { d, _, _ := double(c); return num(int64(d)) }},
		{"users not charged", func(c IncidentColumn) string { _, z, _ := double(c); return num(int64(z)) }},
		{"node killed", func(c IncidentColumn) string { return gw(c, orDash(c.Res.Killed)) }},
		{"time", func(c IncidentColumn) string { return c.Res.Elapsed.Round(10 * time.Millisecond).String() }},
	}
	fmt.Fprintf(out, "%-22s", "")
	for _, c := range cols {
		fmt.Fprintf(out, " %18s", c.Title)
	}
	fmt.Fprintln(out)
	for _, r := range rows {
		fmt.Fprintf(out, "%-22s", r.name)
		for _, c := range cols {
			fmt.Fprintf(out, " %18s", r.get(c))
		}
		fmt.Fprintln(out)
	}
	last := cols[len(cols)-1]
	doubles, none, _ := double(last)
	fmt.Fprintln(out)
	if doubles == 0 && none == 0 {
		fmt.Fprintf(out, "every one of the %d users was charged exactly once.\n", users)
		return true
	}
	fmt.Fprintf(out, "FAILED: %d users charged more than once, %d not charged.\n", doubles, none)
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
