package gateway

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestStalePooledConnection: a request must not be written to a pooled
// connection the upstream already closed, or its fate would look unknown.
func TestStalePooledConnection(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 1)
	u := gc.gwURLs[0]
	// Warm a pooled connection.
	if r := send(t, u+"/pay", "x", "Idempotency-Key", "warm"); r.Status != 201 {
		t.Fatalf("warm = %d", r.Status)
	}
	// The upstream goes away: its connections close.
	addr := gc.up.Addr
	gc.up.Close()
	time.Sleep(50 * time.Millisecond)
	r := send(t, u+"/pay", "x", "Idempotency-Key", "restart")
	if r.Status != 502 || r.ProblemType(t) != "upstream-unreachable" {
		t.Fatalf("upstream down with a pooled connection = %d %s, want 502 (nothing was sent)", r.Status, r.Body)
	}
	// It comes back on the same port: the released key runs.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s not free again: %v", addr, err)
	}
	srv := &http.Server{Handler: gc.up.Handler(), IdleTimeout: 100 * time.Millisecond}
	go srv.Serve(ln)
	defer srv.Close()
	if r := send(t, u+"/pay", "x", "Idempotency-Key", "restart"); r.Status != 201 || gc.up.Executions("restart") != 1 {
		t.Fatalf("retry after the restart = %d, executions %d", r.Status, gc.up.Executions("restart"))
	}
	// An upstream that closes idle connections (100 ms) while up: the next
	// request goes on a fresh connection, never a 504.
	for i := 0; i < 5; i++ {
		time.Sleep(250 * time.Millisecond)
		key := fmt.Sprint("idle-", i)
		if r := send(t, u+"/pay", "x", "Idempotency-Key", key); r.Status != 201 {
			t.Fatalf("after an idle close %d: %d %s", i, r.Status, r.Body)
		}
	}
}
