package config_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/config"
)

func TestTracingDecodes(t *testing.T) {
	f, err := config.Parse([]byte(expiryBase + "tracing:\n  endpoint: https://otel.example:4318/v1/traces\n  sample_ratio: 0.25\n  queue_size: 100\n  batch_size: 10\n  batch_timeout: 2s\n  export_timeout: 3s\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr := f.Tracing
	if tr.Endpoint != "https://otel.example:4318/v1/traces" || tr.SampleRatio == nil || *tr.SampleRatio != 0.25 || tr.QueueSize != 100 ||
		tr.BatchSize != 10 || tr.BatchTimeout.D() != 2*time.Second || tr.ExportTimeout.D() != 3*time.Second {
		t.Fatalf("tracing = %+v", tr)
	}
	// Left out: off, and zero for tracing.DefaultConfig to fill (node.Start).
	f, err = config.Parse([]byte(expiryBase))
	if err != nil || f.Tracing.Endpoint != "" || f.Tracing.SampleRatio != nil || f.Tracing.QueueSize != 0 {
		t.Fatalf("tracing left out = %+v, %v; want zero", f.Tracing, err)
	}
	// sample_ratio: 0 is a ratio (only sampled traceparents are
	// recorded), not "left out".
	f, err = config.Parse([]byte(expiryBase + "tracing: {endpoint: http://127.0.0.1:4318, sample_ratio: 0}\n"))
	if err != nil || f.Tracing.SampleRatio == nil || *f.Tracing.SampleRatio != 0 {
		t.Fatalf("sample_ratio 0 = %+v, %v", f.Tracing, err)
	}
}

func TestTracingErrorsNameTheField(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"endpoint without scheme", "  endpoint: 127.0.0.1:4318\n", "line 3: tracing.endpoint: \"127.0.0.1:4318\": want an http:// or https:// URL"},
		{"endpoint grpc scheme", "  endpoint: grpc://127.0.0.1:4317\n", "line 3: tracing.endpoint: \"grpc://127.0.0.1:4317\": want"},
		{"endpoint without host", "  endpoint: http:///v1/traces\n", "line 3: tracing.endpoint: "},
		{"endpoint with credentials", "  endpoint: http://u:p@127.0.0.1:4318\n", "line 3: tracing.endpoint: "},
		{"endpoint with a query", "  endpoint: http://127.0.0.1:4318/v1/traces?x=1\n", "line 3: tracing.endpoint: "},
		{"endpoint not a URL", "  endpoint: \"http://[::1\"\n", "line 3: tracing.endpoint: "},
		{"ratio over 1", "  sample_ratio: 1.5\n", "line 3: tracing.sample_ratio: 1.5: want 0 to 1"},
		{"ratio negative", "  sample_ratio: -0.1\n", "line 3: tracing.sample_ratio: -0.1: want 0 to 1"},
		{"ratio NaN", "  sample_ratio: .nan\n", "line 3: tracing.sample_ratio: NaN: want 0 to 1"},
		{"ratio infinite", "  sample_ratio: .inf\n", "line 3: tracing.sample_ratio: +Inf: want 0 to 1"},
		{"ratio a word", "  sample_ratio: half\n", "line 3: tracing.sample_ratio: "},
		{"queue negative", "  queue_size: -1\n", "line 3: tracing.queue_size: -1: want 1 to 1048576"},
		{"queue huge", "  queue_size: 2000000\n", "line 3: tracing.queue_size: 2000000: want 1 to 1048576"},
		{"batch huge", "  batch_size: 100000\n", "line 3: tracing.batch_size: 100000: want 1 to 65536"},
		{"batch over queue", "  queue_size: 10\n  batch_size: 20\n", "tracing.batch_size: 20 is over tracing.queue_size 10"},
		{"batch timeout long", "  batch_timeout: 1h\n", "line 3: tracing.batch_timeout: 1h0m0s: want up to 10m0s"},
		{"export timeout long", "  export_timeout: 11m\n", "line 3: tracing.export_timeout: 11m0s: want up to 10m0s"},
		{"export timeout negative", "  export_timeout: -1s\n", "line 3: tracing.export_timeout: "},
		{"unknown field", "  headers: {x: y}\n", "line 3: tracing.headers: unknown field"},
	}
	for _, tt := range tests {
		_, err := config.Parse([]byte(expiryBase + "tracing:\n" + tt.yaml))
		if err == nil {
			t.Errorf("%s: Parse succeeded, want an error containing %q", tt.name, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error = %q, want one line containing %q", tt.name, err, tt.want)
		}
	}
}

// TestTracingExample: the file of the tracing example in
// docs/operations.md is a valid cluster file with tracing on.
func TestTracingExample(t *testing.T) {
	data, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Tracing\n")
	_, block, ok2 := strings.Cut(section, "<<'YAML'\n")
	block, _, ok3 := strings.Cut(block, "\nYAML\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/operations.md: no YAML heredoc under ## Tracing")
	}
	f, err := config.Parse([]byte(block))
	if err != nil {
		t.Fatalf("the tracing example's file: %v", err)
	}
	if f.Tracing.Endpoint == "" || f.Tracing.SampleRatio == nil {
		t.Fatalf("the tracing example's file sets no tracing: %+v", f.Tracing)
	}
}
