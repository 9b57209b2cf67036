package api

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestAPISETNXOnALiveKeyIsARead: PUT ?nx=1 (and If-None-Match: *) on a key
// that is live answers 409 with the current value and version from a read,
// with no log entry; under an Idempotency-Key it is proposed (the state
// machine's memory of the key gives a retry the first answer). After the
// key is gone, the next SETNX creates it. Bad input around it is refused
// and changes nothing.
func TestAPISETNXOnALiveKeyIsARead(t *testing.T) {
	t.Parallel()
	m := memstore.New(t)
	ac := &apiCluster{}
	ac.serve(t, m, prometheus.NewRegistry(), nil)
	u := ac.urls[0] + "/v1/kv/lock"
	first := do(t, "PUT", u+"?nx=1&ttl=1m", "owner-a")
	if first.Status != 201 {
		t.Fatalf("first SETNX = %d %s", first.Status, first.Body)
	}
	before, _ := m.Indexes()
	for i, hdr := range [][]string{nil, {"If-None-Match", "*"}, nil} {
		r := do(t, "PUT", u+"?nx=1&ttl=1m", "owner-b", hdr...)
		if r.Status != 409 || r.Body != "owner-a" || r.Header.Get("ETag") != first.Header.Get("ETag") {
			t.Fatalf("refused SETNX %d = %d %q (ETag %q), want 409 owner-a %s", i, r.Status, r.Body, r.Header.Get("ETag"), first.Header.Get("ETag"))
		}
	}
	for _, bad := range []struct{ url, body string }{
		{u + "?nx=maybe", "x"},
		{u + "?nx=1&ttl=-1s", "x"},
		{ac.urls[0] + "/v1/kv/" + strings.Repeat("k", 256) + "?nx=1", "x"},
		{ac.urls[0] + "/v1/kv/%00node%2Fn1?nx=1", "x"},
	} {
		if r := do(t, "PUT", bad.url, bad.body); r.Status != 400 {
			t.Fatalf("PUT %s = %d %s, want 400", bad.url, r.Status, r.Body)
		}
	}
	if after, _ := m.Indexes(); after != before {
		t.Fatalf("refused SETNX grew the log from %d to %d", before, after)
	}
	if r := do(t, "PUT", u+"?nx=1", "owner-b", "Idempotency-Key", "b-1"); r.Status != 409 || r.Body != "owner-a" {
		t.Fatalf("SETNX under an Idempotency-Key = %d %q, want 409 owner-a", r.Status, r.Body)
	}
	if after, _ := m.Indexes(); after != before+1 {
		t.Fatalf("a SETNX under an Idempotency-Key moved the log from %d to %d, want one entry", before, after)
	}
	if r := do(t, "DELETE", u, ""); r.Status != 200 || r.Body != "owner-a" {
		t.Fatalf("DELETE = %d %q", r.Status, r.Body)
	}
	if r := do(t, "PUT", u+"?nx=1", "owner-c"); r.Status != 201 {
		t.Fatalf("SETNX after the delete = %d %s, want 201", r.Status, r.Body)
	}
	if r := do(t, "GET", u, ""); r.Status != 200 || r.Body != "owner-c" {
		t.Fatalf("GET = %d %q, want owner-c", r.Status, r.Body)
	}
}
