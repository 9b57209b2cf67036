package config_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/ttl"
)

const expiryBase = `nodes: [{id: n1, raft: "127.0.0.1:7001", api: "127.0.0.1:9001"}]
`

func TestExpiryDecodes(t *testing.T) {
	f, err := config.Parse([]byte(expiryBase + "expiry:\n  interval: 250ms\n  batch_size: 1024\n  max_batches: 4\n  backlog_pause: 5ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Expiry{Interval: config.Duration(250 * time.Millisecond), BatchSize: 1024, MaxBatches: 4, BacklogPause: config.Duration(5 * time.Millisecond)}
	if f.Expiry != want {
		t.Fatalf("expiry = %+v, want %+v", f.Expiry, want)
	}
	// Left out: zero, for ttl.DefaultSweeperConfig to fill (node.Start).
	f, err = config.Parse([]byte(expiryBase))
	if err != nil || f.Expiry != (config.Expiry{}) {
		t.Fatalf("expiry left out = %+v, %v; want zero", f.Expiry, err)
	}
}

func TestExpiryErrorsNameTheField(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"negative batch", "  batch_size: -1\n", "line 3: expiry.batch_size: -1: want 1 to 4096"},
		{"huge batch", "  batch_size: 100000\n", "line 3: expiry.batch_size: 100000"},
		{"batch overflowing int", "  batch_size: 99999999999999999999999\n", "line 3: expiry.batch_size: "},
		{"fractional batch", "  batch_size: 1.5\n", "line 3: expiry.batch_size: \"1.5\": want a whole number"},
		{"batch as a word", "  batch_size: lots\n", "line 3: expiry.batch_size: "},
		{"negative max_batches", "  max_batches: -3\n", "line 3: expiry.max_batches: -3"},
		{"huge max_batches", "  max_batches: 1025\n", "line 3: expiry.max_batches: 1025: want 1 to 1024"},
		{"interval too short", "  interval: 1ms\n", "line 3: expiry.interval: 1ms: want 10ms to 1h0m0s"},
		{"interval too long", "  interval: 48h\n", "line 3: expiry.interval: 48h0m0s"},
		{"negative interval", "  interval: -1s\n", "line 3: expiry.interval: \"-1s\" is not a duration"},
		{"interval without unit", "  interval: 5\n", "line 3: expiry.interval: \"5\" is not a duration"},
		{"pause over interval", "  interval: 100ms\n  backlog_pause: 1s\n", "line 4: expiry.backlog_pause: 1s is longer than expiry.interval 100ms"},
		{"pause as a list", "  backlog_pause: [1s]\n", "line 3: expiry.backlog_pause: want a duration"},
		{"unknown field", "  hz: 10\n", "line 3: expiry.hz: unknown field (known here: interval, batch_size, max_batches, backlog_pause)"},
		{"set twice", "  batch_size: 10\n  batch_size: 20\n", "line 4: expiry.batch_size: set twice (first on line 3)"},
	}
	for _, tt := range tests {
		_, err := config.Parse([]byte(expiryBase + "expiry:\n" + tt.yaml))
		if err == nil {
			t.Errorf("%s: Parse succeeded, want an error containing %q", tt.name, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error = %q, want one line containing %q", tt.name, err, tt.want)
		}
	}
	if _, err := config.Parse([]byte(expiryBase + "expiry: 5\n")); err == nil || !strings.Contains(err.Error(), "line 2: expiry: want a mapping") {
		t.Errorf("expiry: 5: error = %v, want one naming expiry", err)
	}
}

// TestExpiryBoundsAreTheSweepers: the file accepts exactly the values the
// sweeper does, at each edge of each field.
func TestExpiryBoundsAreTheSweepers(t *testing.T) {
	def := ttl.DefaultSweeperConfig()
	tests := []struct {
		field string
		value string
		set   func(*ttl.SweeperConfig)
	}{
		{"batch_size", "1", func(c *ttl.SweeperConfig) { c.BatchSize = 1 }},
		{"batch_size", fmt.Sprint(ttl.MaxSweepBatchSize), func(c *ttl.SweeperConfig) { c.BatchSize = ttl.MaxSweepBatchSize }},
		{"batch_size", fmt.Sprint(ttl.MaxSweepBatchSize + 1), func(c *ttl.SweeperConfig) { c.BatchSize = ttl.MaxSweepBatchSize + 1 }},
		{"max_batches", "1", func(c *ttl.SweeperConfig) { c.MaxBatches = 1 }},
		{"max_batches", fmt.Sprint(ttl.MaxSweepMaxBatches), func(c *ttl.SweeperConfig) { c.MaxBatches = ttl.MaxSweepMaxBatches }},
		{"max_batches", fmt.Sprint(ttl.MaxSweepMaxBatches + 1), func(c *ttl.SweeperConfig) { c.MaxBatches = ttl.MaxSweepMaxBatches + 1 }},
		{"interval", ttl.MinSweepInterval.String(), func(c *ttl.SweeperConfig) { c.Interval = ttl.MinSweepInterval }},
		{"interval", (ttl.MinSweepInterval - time.Millisecond).String(), func(c *ttl.SweeperConfig) { c.Interval = ttl.MinSweepInterval - time.Millisecond }},
		{"interval", ttl.MaxSweepInterval.String(), func(c *ttl.SweeperConfig) { c.Interval = ttl.MaxSweepInterval }},
		{"interval", (ttl.MaxSweepInterval + time.Second).String(), func(c *ttl.SweeperConfig) { c.Interval = ttl.MaxSweepInterval + time.Second }},
	}
	for _, tt := range tests {
		c := def
		tt.set(&c)
		sweeperOK := c.Validate() == nil
		_, err := config.Parse([]byte(fmt.Sprintf("%sexpiry: {%s: %s}\n", expiryBase, tt.field, tt.value)))
		if fileOK := err == nil; fileOK != sweeperOK {
			t.Errorf("expiry.%s: %s: the file accepts it: %v (%v), the sweeper: %v", tt.field, tt.value, fileOK, err, sweeperOK)
		}
	}
}
