package resp

import (
	"context"
	"testing"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestTraceWrites: with tracing on, a write gets a server span of its own
// (the protocol carries no trace context) named by its command, with the
// commands it ran; a read gets none. Its value and key are in no
// attribute.
func TestTraceWrites(t *testing.T) {
	col := testsupport.StartCollector(t)
	p := testsupport.NewTracing(t, col.URL, "resp-test", 1, nil)
	tc := startCluster(t, func(c *Config) { c.Tracer = p.Tracer("resp") })
	rdb := client(t, tc.addrs[1])
	ctx := context.Background()
	if err := rdb.Set(ctx, "traced-secret-key", "traced-secret-value", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Get(ctx, "traced-secret-key").Err(); err != nil {
		t.Fatal(err)
	}
	testsupport.FlushTraces(t, p)
	spans := col.Spans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1 (the SET's): %+v", len(spans), spans)
	}
	s := spans[0]
	if s.Name != "resp set" || s.ParentID != "" || s.Kind != "SPAN_KIND_SERVER" || s.Attrs["idemgate.resp.commands"] != "set" || s.Attrs["idemgate.resp.count"] != "1" {
		t.Errorf("span = %+v, want a root server span resp set", s)
	}
	for k, v := range s.Attrs {
		if v == "traced-secret-key" || v == "traced-secret-value" {
			t.Errorf("attribute %s = %q", k, v)
		}
	}
}
