package transport

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// BenchmarkForwardApply: one apply's round trip on a forwarding
// connection (client and server in this process: allocs/op counts both),
// untraced, and with a trace context to a leader that reads it and to one
// that does not (which gets the untraced frame), in one run.
//
//	go test -run XXX -bench ForwardApply -benchmem ./raftstore/transport
func BenchmarkForwardApply(b *testing.B) {
	reader, _ := json.Marshal(Hello{Node: "leader", Features: []string{FeatureTracedApply}})
	for _, bc := range []struct {
		name  string
		hello string
		tc    TraceContext
	}{
		{"untraced", string(reader), TraceContext{}},
		{"traced", string(reader), tcOf(1)},
		{"traced-to-older", `{"node":"leader"}`, tcOf(1)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := &Server{Handler: echo{}, MaxFrame: 1 << 20, Errors: &testErrors, Logger: discard}
			addr := serveNode(b, srv, bc.hello)
			c, err := DialForward(Peer{ID: "leader", Addr: addr, Timeout: 5 * time.Second}, 1<<20, &testErrors)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			h, err := AskHello(Peer{ID: "leader", Addr: addr, Timeout: 5 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			c.Learn(h)
			ctx := context.Background()
			payload := make([]byte, 200)
			b.ReportAllocs()
			for b.Loop() {
				wait, err := c.SendApplyTraced(ctx, Apply, payload, bc.tc)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
