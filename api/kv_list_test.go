package api

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/memstore"
)

// TestKVOnAList: a key that holds a list (the Redis protocol's LPUSH) is
// not served as a string by /v1/kv: reads, increments and deletes answer
// 409 wrong-type and change nothing, a set-if-absent finds it there (409,
// no body: a list is no value), and a plain PUT replaces it, as Redis's
// SET does.
func TestKVOnAList(t *testing.T) {
	t.Parallel()
	m := memstore.New(t)
	ac := &apiCluster{}
	ac.serve(t, m, prometheus.NewRegistry(), nil)
	u := ac.urls[0]
	if _, err := m.Apply(context.Background(), command.ListPushCommand([]byte("queue"), [][]byte{[]byte("job-1")}, true, false)); err != nil {
		t.Fatal(err)
	}
	for i, s := range []struct {
		method, url, body string
		hdr               []string
		status            int
		problem, answer   string
	}{
		{"GET", u + "/v1/kv/queue", "", nil, 409, "wrong-type", ""},
		{"POST", u + "/v1/kv/queue", `{"by":1}`, []string{"Content-Type", "application/json"}, 409, "wrong-type", ""},
		{"DELETE", u + "/v1/kv/queue", "", nil, 409, "wrong-type", ""},
		{"PUT", u + "/v1/kv/queue?nx=1", "x", nil, 409, "", ""},
		{"PUT", u + "/v1/kv/queue", "a string now", nil, 200, "", ""},
		{"GET", u + "/v1/kv/queue", "", nil, 200, "", "a string now"},
	} {
		r := do(t, s.method, s.url, s.body, s.hdr...)
		if r.Status != s.status || (s.problem != "" && r.ProblemType(t) != s.problem) || (s.problem == "" && r.Body != s.answer) {
			t.Fatalf("step %d %s %s = %d %q, want %d %s %q", i, s.method, s.url, r.Status, r.Body, s.status, s.problem, s.answer)
		}
	}
}
