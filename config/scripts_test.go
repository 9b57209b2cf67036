package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/config"
)

func TestScriptsDecodes(t *testing.T) {
	f, err := config.Parse([]byte(expiryBase + "scripts:\n  cache: 256MiB\n  max_size: 8MiB\n  concurrency: 3\n  queue_wait: 500ms\n  max_keys: 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Scripts{Cache: 256 << 20, MaxSize: 8 << 20, Concurrency: 3, QueueWait: config.Duration(500 * time.Millisecond), MaxKeys: 100}
	if f.Scripts != want {
		t.Fatalf("scripts = %+v, want %+v", f.Scripts, want)
	}
	// Left out: zero, for resp.DefaultConfig to fill (node.Start).
	f, err = config.Parse([]byte(expiryBase))
	if err != nil || f.Scripts != (config.Scripts{}) {
		t.Fatalf("scripts left out = %+v, %v; want zero", f.Scripts, err)
	}
}

func TestScriptsErrorsNameTheField(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"cache too small", "  cache: 64KiB\n", "line 3: scripts.cache: 65536: want 1MiB to 1TiB"},
		{"cache below max_size", "  cache: 2MiB\n  max_size: 4MiB\n", "scripts.cache: 2097152 is less than scripts.max_size 4194304"},
		{"max_size too small", "  max_size: 1000\n", "line 3: scripts.max_size: 1000: want 1MiB to 1TiB"},
		{"max_size huge", "  max_size: 2TiB\n", "line 3: scripts.max_size: "},
		{"negative concurrency", "  concurrency: -1\n", "line 3: scripts.concurrency: -1: want 1 to 4096"},
		{"huge concurrency", "  concurrency: 100000\n", "line 3: scripts.concurrency: 100000"},
		{"negative wait", "  queue_wait: -1s\n", "line 3: scripts.queue_wait: \"-1s\" is not a duration"},
		{"wait too long", "  queue_wait: 2h\n", "line 3: scripts.queue_wait: 2h0m0s: want up to 1m0s"},
		{"negative max_keys", "  max_keys: -5\n", "line 3: scripts.max_keys: -5: want 1 to 1048576"},
		{"unknown field", "  timeout: 5s\n", "line 3: scripts.timeout: unknown field"},
	}
	for _, tt := range tests {
		_, err := config.Parse([]byte(expiryBase + "scripts:\n" + tt.yaml))
		if err == nil {
			t.Errorf("%s: Parse succeeded, want an error containing %q", tt.name, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error = %q, want one line containing %q", tt.name, err, tt.want)
		}
	}
}
