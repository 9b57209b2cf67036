package resp

import (
	"context"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

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

// TestTraceTransactionsAndScripts: a MULTI/EXEC that writes and a script
// run each get a root server span of their own, with the store's spans of
// their effects (the forward to the leader: the client is on a follower)
// under it; a transaction of reads gets none.
func TestTraceTransactionsAndScripts(t *testing.T) {
	col := testsupport.StartCollector(t)
	p := testsupport.NewTracing(t, col.URL, "resp-test", 1, nil)
	tc := startCluster(t, func(c *Config) { c.Tracer = p.Tracer("resp") })
	rdb := client(t, tc.addrs[1])
	ctx := context.Background()
	if _, err := rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, "tx-a", "1", 0)
		pipe.Incr(ctx, "tx-b")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Get(ctx, "tx-a")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Eval(ctx, "return redis.call('SET', KEYS[1], ARGV[1])", []string{"sc-a"}, "v").Err(); err != nil {
		t.Fatal(err)
	}
	testsupport.FlushTraces(t, p)
	spans := col.Spans()
	roots := map[string]string{} // span id -> name
	var names []string
	for _, s := range spans {
		if s.ParentID == "" {
			if s.Kind != "SPAN_KIND_SERVER" {
				t.Errorf("root span %+v: want a server span", s)
			}
			roots[s.SpanID] = s.Name
			names = append(names, s.Name+" "+s.Attrs["idemgate.resp.count"])
		}
	}
	slices.Sort(names)
	if want := []string{"resp eval 1", "resp exec 2"}; !slices.Equal(names, want) {
		t.Fatalf("root spans (name count) %q, want %q", names, want)
	}
	under := map[string]int{} // root name -> store spans under it
	for _, s := range spans {
		if s.ParentID != "" {
			if root, ok := roots[s.ParentID]; ok && s.Name == "raft.forward" {
				under[root]++
			}
		}
	}
	if under["resp exec"] != 1 || under["resp eval"] != 1 {
		t.Fatalf("raft.forward spans under each root: %v, want one under each", under)
	}
}
