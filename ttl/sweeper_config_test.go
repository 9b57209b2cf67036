package ttl

import (
	"strings"
	"testing"
	"time"
)

func TestSweeperConfigValidate(t *testing.T) {
	if err := DefaultSweeperConfig().Validate(); err != nil {
		t.Fatalf("DefaultSweeperConfig().Validate() = %v", err)
	}
	tests := []struct {
		name  string
		set   func(*SweeperConfig)
		field string // "" : valid
	}{
		{"smallest", func(c *SweeperConfig) { *c = SweeperConfig{MinSweepInterval, 1, 1, time.Nanosecond} }, ""},
		{"largest", func(c *SweeperConfig) {
			*c = SweeperConfig{MaxSweepInterval, MaxSweepBatchSize, MaxSweepMaxBatches, MaxSweepInterval}
		}, ""},
		{"zero", func(c *SweeperConfig) { *c = SweeperConfig{} }, "Interval"},
		{"interval too short", func(c *SweeperConfig) { c.Interval = time.Millisecond; c.Pause = time.Millisecond }, "Interval"},
		{"interval too long", func(c *SweeperConfig) { c.Interval = 2 * time.Hour }, "Interval"},
		{"negative batch", func(c *SweeperConfig) { c.BatchSize = -1 }, "BatchSize"},
		{"batch too large", func(c *SweeperConfig) { c.BatchSize = MaxSweepBatchSize + 1 }, "BatchSize"},
		{"no batches", func(c *SweeperConfig) { c.MaxBatches = 0 }, "MaxBatches"},
		{"too many batches", func(c *SweeperConfig) { c.MaxBatches = MaxSweepMaxBatches + 1 }, "MaxBatches"},
		{"no pause", func(c *SweeperConfig) { c.Pause = 0 }, "Pause"},
		{"pause over interval", func(c *SweeperConfig) { c.Pause = 2 * c.Interval }, "Pause"},
	}
	for _, tt := range tests {
		c := DefaultSweeperConfig()
		tt.set(&c)
		err := c.Validate()
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s: Validate(%+v) = %v, want nil", tt.name, c, err)
		case tt.field != "" && (err == nil || !strings.Contains(err.Error(), "sweeper "+tt.field+" ")):
			t.Errorf("%s: Validate(%+v) = %v, want an error naming %s", tt.name, c, err, tt.field)
		}
	}
}
