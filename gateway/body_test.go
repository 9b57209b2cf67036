package gateway

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestBodyBudget: while slow clients hold the listener's body budget, a
// further body is answered 503 at once (nothing buffered, the key not
// taken), and the same request succeeds once the budget is free.
func TestBodyBudget(t *testing.T) {
	t.Parallel()
	gc := startGatewaysOver(t, nil, []nodeStore{memstore.New(t)}, "", func(c *Config) {
		c.MaxRequestBody, c.MaxBodyBuffer = 64<<10, 100<<10
	})
	addr := strings.TrimPrefix(gc.gwURLs[0], "http://")
	body := strings.Repeat("b", 60<<10)
	// A slow client: 60 KiB declared, 16 KiB sent, the rest held back.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "POST /pay HTTP/1.1\r\nHost: x\r\nIdempotency-Key: slow\r\nX-User-Id: u\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:16<<10])
	time.Sleep(200 * time.Millisecond)
	// A raw connection: the 503 (and its close) comes while the body is
	// still being written, which an HTTP client reports as a reset.
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	second.SetDeadline(time.Now().Add(5 * time.Second))
	go fmt.Fprintf(second, "POST /pay HTTP/1.1\r\nHost: x\r\nIdempotency-Key: second\r\nX-User-Id: u\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	busy, err := http.ReadResponse(bufio.NewReader(second), nil)
	if err != nil || busy.StatusCode != 503 {
		t.Fatalf("a body beyond the budget = %v, %v; want 503", busy, err)
	}
	busy.Body.Close()
	if gc.up.Executions("second") != 0 {
		t.Fatal("the refused request reached the upstream")
	}
	// The slow client finishes: its request runs, and the budget is free.
	slow.SetDeadline(time.Now().Add(5 * time.Second))
	slow.Write([]byte(body[16<<10:]))
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("the slow client's request = %v, %v", resp, err)
	}
	resp.Body.Close()
	if r := send(t, gc.gwURLs[0]+"/pay", body, "Idempotency-Key", "second", "X-User-Id", "u"); r.Status != 201 {
		t.Fatalf("the retry after the budget freed = %d %s", r.Status, r.Body)
	}
}
