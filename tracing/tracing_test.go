package tracing

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Endpoint = "http://127.0.0.1:4318"
	tests := []struct {
		name string
		set  func(*Config)
		want string // "" valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"off", func(c *Config) { c.Endpoint = ""; c.QueueSize = -1 }, ""},
		{"https", func(c *Config) { c.Endpoint = "https://otel.example/v1/traces" }, ""},
		{"ratio 0", func(c *Config) { c.SampleRatio = 0 }, ""},
		{"no scheme", func(c *Config) { c.Endpoint = "127.0.0.1:4318" }, "Endpoint"},
		{"grpc scheme", func(c *Config) { c.Endpoint = "grpc://127.0.0.1:4317" }, "Endpoint"},
		{"credentials", func(c *Config) { c.Endpoint = "http://u:p@h:1" }, "Endpoint"},
		{"NaN", func(c *Config) { c.SampleRatio = math.NaN() }, "SampleRatio"},
		{"over 1", func(c *Config) { c.SampleRatio = 1.01 }, "SampleRatio"},
		{"queue 0", func(c *Config) { c.QueueSize = 0 }, "QueueSize"},
		{"queue huge", func(c *Config) { c.QueueSize = maxQueueSize + 1 }, "QueueSize"},
		{"batch 0", func(c *Config) { c.BatchSize = 0 }, "BatchSize"},
		{"batch over queue", func(c *Config) { c.QueueSize, c.BatchSize = 4, 5 }, "BatchSize 5 is over QueueSize 4"},
		{"batch timeout 0", func(c *Config) { c.BatchTimeout = 0 }, "BatchTimeout"},
		{"export timeout long", func(c *Config) { c.ExportTimeout = time.Hour }, "ExportTimeout"},
	}
	for _, tt := range tests {
		c := ok
		tt.set(&c)
		err := c.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Validate() = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: Validate() = %v, want an error naming %s", tt.name, err, tt.want)
		}
	}
}

func TestTracesURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4318":            "http://127.0.0.1:4318/v1/traces",
		"http://127.0.0.1:4318/":           "http://127.0.0.1:4318/v1/traces",
		"https://otel.example/custom/path": "https://otel.example/custom/path",
	} {
		if got := (Config{Endpoint: in}).tracesURL(); got != want {
			t.Errorf("tracesURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNewOff: no endpoint, no provider; its methods are safe on nil.
func TestNewOff(t *testing.T) {
	p, err := New(DefaultConfig())
	if p != nil || err != nil {
		t.Fatalf("New without endpoint = %v, %v; want nil, nil", p, err)
	}
	if p.Tracer("x") != nil || p.Register(nil) != nil || p.Shutdown(t.Context()) != nil || p.Stats() != (Stats{}) {
		t.Fatal("a nil Provider is not off")
	}
}

func FuzzBoundTraceState(f *testing.F) {
	f.Add("a=1,b=2")
	f.Add(strings.Repeat("k="+strings.Repeat("v", 200)+",", 5))
	f.Add(strings.Repeat("a=1,", 40))
	f.Fuzz(func(t *testing.T, s string) {
		out := boundTraceState(s)
		switch {
		case len(s) <= maxTraceState || strings.Count(s, ",") >= maxStateMembers:
			if out != s {
				t.Fatalf("boundTraceState(%q) = %q, want it unchanged", s, out)
			}
		case len(out) > maxTraceState:
			t.Fatalf("boundTraceState(%d bytes) = %d bytes, over %d", len(s), len(out), maxTraceState)
		}
		for _, m := range strings.Split(out, ",") {
			if len(s) > maxTraceState && strings.Count(s, ",") < maxStateMembers && len(m) > maxStateMember {
				t.Fatalf("a member of %d bytes kept", len(m))
			}
		}
	})
}
