package reconcile

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Print writes the report for a reader: the counts of each kind, each
// finding on a line of its own, and "clean: ..." when there is none.
func (rep Report) Print(w io.Writer) {
	fmt.Fprintf(w, "reconcile: %d records, %d statement rows\n", rep.Records, rep.LedgerRows)
	fmt.Fprintf(w, "keys charged more than once: %d\n", len(rep.ChargedTwice))
	for _, c := range rep.ChargedTwice {
		fmt.Fprintf(w, "  %q on lines %v", c.Key, c.Lines)
		if len(c.IDs) > 0 {
			fmt.Fprintf(w, ", charges %s", strings.Join(c.IDs, ", "))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "charges with no record: %d\n", len(rep.ChargesWithoutRecord))
	for _, r := range rep.ChargesWithoutRecord {
		fmt.Fprintf(w, "  line %d: key %q", r.Line, r.Key)
		if r.ID != "" {
			fmt.Fprintf(w, ", charge %s", r.ID)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "records completed with no charge: %d\n", len(rep.RecordsWithoutCharge))
	for _, r := range rep.RecordsWithoutCharge {
		fmt.Fprintf(w, "  %s %q (tenant %q): %d at %s", r.Scope, r.Key, r.Tenant, r.StatusCode, r.CreatedAt.UTC().Format(time.RFC3339))
		if r.ReconcileID != "" {
			fmt.Fprintf(w, ", charge %s", r.ReconcileID)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "suspected duplicates: %d\n", len(rep.SuspectedDuplicates))
	for _, s := range rep.SuspectedDuplicates {
		fmt.Fprintf(w, "  %s %q (tenant %q) looks like %q: same %s\n", s.Scope, s.Key, s.Tenant, s.EarlierKey, s.Why)
	}
	if rep.Clean {
		fmt.Fprintln(w, "clean: every charge has its record and every record its charge")
	}
}
