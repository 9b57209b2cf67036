package client_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/idemgate/idemgate/client"
)

// hostLog is a transport that notes the host of every write it sends.
type hostLog struct {
	mu    sync.Mutex
	hosts []string
}

func (l *hostLog) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut {
		l.mu.Lock()
		l.hosts = append(l.hosts, r.URL.Host)
		l.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestWritesStartAtTheLeader: once the client has learned which node
// leads, its KV writes go to that node's API (no forwarding), where
// without the view they went to each node in turn.
func TestWritesStartAtTheLeader(t *testing.T) {
	log := &hostLog{}
	c, err := client.New(client.Config{APIs: apis, HTTPClient: &http.Client{Transport: log}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const writes, inARow = 400, 20
	for i := range writes {
		if _, _, err := c.KV.SetNX(ctx, fmt.Sprintf("leader-view-%d", i), []byte("v"), 0); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if h := log.hosts; len(h) >= inARow && allSame(h[len(h)-inARow:]) {
			break
		}
	}
	h := log.hosts
	last := h[len(h)-1]
	st, err := c.Cluster.Status(ctx, "http://"+last)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) < inARow || !allSame(h[len(h)-inARow:]) || st.Role != "leader" {
		t.Fatalf("after %d writes, the last %d went to %q; the node of the last is %s: want them all at the leader", len(h), inARow, h[max(0, len(h)-inARow):], st.Role)
	}
}

func allSame(s []string) bool {
	for _, x := range s {
		if x != s[0] {
			return false
		}
	}
	return true
}
