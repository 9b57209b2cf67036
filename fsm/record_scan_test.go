package fsm

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// TestScanRecords: a walk in chunks of any size visits every live record
// under the prefix once, in key order, and nothing outside it (a scope
// that is a prefix of another is not that scope); expired records are
// left out, and a record past its processing deadline is seen unknown.
func TestScanRecords(t *testing.T) {
	h := newHarness(t)
	begin := func(scope, tenant, key string, ttl, timeout time.Duration) {
		if r := h.apply(command.Command{Type: command.TypeRecordBegin, Key: command.RecordKey(scope, tenant, key), Value: []byte("fp"), TTL: ttl, Timeout: timeout}); r.Code != command.CodeCreated {
			t.Fatalf("begin %s/%s/%s: %v", scope, tenant, key, r.Code)
		}
	}
	begin("pay", "", "expires", time.Second, 0)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		begin("pay", "", k, time.Hour, 0)
	}
	begin("pay", "t1", "a", time.Hour, 0)
	begin("pay", "t1", "late", time.Hour, time.Minute)
	begin("pa", "", "a", time.Hour, 0)
	begin("payx", "", "a", time.Hour, 0)
	h.advance(2 * time.Minute) // "expires" expired, "late" past its deadline

	walk := func(prefix string, max int) (keys []string) {
		var from []byte
		for i := 0; ; i++ {
			if i > 100 {
				t.Fatalf("prefix %q, chunks of %d: no end after 100 chunks", prefix, max)
			}
			n := 0
			next, err := h.f.ScanRecords([]byte(prefix), from, h.now(), max, func(k []byte, r *command.Record) error {
				n++
				keys = append(keys, strings.ReplaceAll(string(k), "\x00", "/")+"="+r.State.String())
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n > max && max > 0 {
				t.Errorf("a chunk of %d visited %d", max, n)
			}
			if next == nil {
				return keys
			}
			from = next
		}
	}
	all := []string{"pa//a=in_flight", "pay//a=in_flight", "pay//b=in_flight", "pay//c=in_flight", "pay//d=in_flight", "pay//e=in_flight",
		"pay/t1/a=in_flight", "pay/t1/late=unknown", "payx//a=in_flight"}
	for _, max := range []int{0, 1, 2, 3, 100} {
		for _, tc := range []struct {
			prefix string
			want   []string
		}{
			{"", all},
			{"pay\x00", all[1:8]},
			{"pay\x00t1\x00", all[6:8]},
			{"pay\x00\x00", all[1:6]},
			{"pa\x00", all[:1]},
			{"nosuch\x00", nil},
		} {
			if got := walk(tc.prefix, max); !slices.Equal(got, tc.want) {
				t.Errorf("prefix %q, chunks of %d:\n got %v\nwant %v", tc.prefix, max, got, tc.want)
			}
		}
	}
	// fn's error ends the walk and is returned.
	stop := errors.New("stop")
	if _, err := h.f.ScanRecords(nil, nil, h.now(), 10, func([]byte, *command.Record) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("ScanRecords = %v, want fn's error", err)
	}
}
