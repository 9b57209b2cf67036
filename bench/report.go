package bench

import (
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
		if l := s.Lock; l != nil {
			fmt.Fprintf(w, "%-28s %.0f acquisitions/s, %.0f failed attempts/s; time to acquire p50 %s, p99 %s (%d clients still waiting at the end); per client %d-%d acquisitions\n",
				"", l.AcquisitionsPerSec, l.FailedPerSec, ms(s.P50), ms(s.P99), l.StillWaiting, l.MinPerClient, l.MaxPerClient)
			if l.HotKeyAcquisitions > 0 {
				fmt.Fprintf(w, "%-28s the hottest key: %d acquisitions (%.0f%%), one per %s\n", "", l.HotKeyAcquisitions,
					100*float64(l.HotKeyAcquisitions)/float64(l.Acquisitions), ms(s.Elapsed/time.Duration(l.HotKeyAcquisitions)))
			}
		}
		if sale := s.Sale; sale != nil {
			soldOut := "not sold out"
			if sale.SoldOutNS > 0 {
				soldOut = "sold out in " + ms(time.Duration(sale.SoldOutNS))
			}
			fmt.Fprintf(w, "%-28s %d tokens %s; %d consumes, up to %d racers on a token; per consumer %d-%d tokens won\n",
				"", sale.Tokens, soldOut, sale.Consumes, sale.MaxRacers, sale.MinWins, sale.MaxWins)
		}
		if c := s.CPU; c != nil {
			fmt.Fprintf(w, "%-28s CPU per op: %s in the bench process (clients%s)%s\n", "", us(time.Duration(c.ProcessNS)),
				map[bool]string{true: "", false: " and idemgate's nodes"}[s.Baseline], map[bool]string{true: fmt.Sprintf(", %s in the servers", us(time.Duration(c.ServersNS))), false: ""}[s.Baseline])
		}
		if s.FirstError != "" {
			fmt.Fprintf(w, "%-28s first error: %s\n", "", s.FirstError)
		}
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

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
