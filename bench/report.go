package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// WriteTable prints measurements as a table.
func WriteTable(w io.Writer, all []Stats) {
	fmt.Fprintf(w, "%-28s %7s %10s %8s %8s %8s %8s %7s  %s\n", "scenario", "clients", "ops/s", "p50", "p90", "p99", "max", "errors", "exactly-once check")
	for _, s := range all {
		if s.Skipped != "" {
			fmt.Fprintf(w, "%-28s skipped: %s\n", s.Name, s.Skipped)
			continue
		}
		check := s.Check
		if check != "" {
			verdict := "FAIL"
			if s.CheckOK {
				verdict = "ok"
			}
			check = verdict + ": " + check
		}
		fmt.Fprintf(w, "%-28s %7d %10.0f %8s %8s %8s %8s %7d  %s\n", s.Name, s.Clients, s.OpsPerSec,
			ms(s.P50), ms(s.P90), ms(s.P99), ms(s.Max), s.Errors, check)
		if s.FirstError != "" {
			fmt.Fprintf(w, "%-28s first error: %s\n", "", s.FirstError)
		}
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// WriteJSON prints measurements as one JSON document.
func WriteJSON(w io.Writer, all []Stats) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"results": all})
}

// AllChecksOK reports whether every check that ran passed, with no errors
// in measurements that have a check.
func AllChecksOK(all []Stats) bool {
	for _, s := range all {
		if s.Check != "" && !s.CheckOK {
			return false
		}
	}
	return true
}
