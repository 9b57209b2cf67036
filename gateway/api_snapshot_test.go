package gateway

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/raftstore"
)

// TestAPISnapshotAuth: the backup holds every stored body and unspent
// token, so only an admin token gets it: 401 without a usable token, 403
// for read and app tokens, even though it is a GET.
func TestAPISnapshotAuth(t *testing.T) {
	t.Parallel()
	ac := startAPIs(t, 1, testAccess(t, nil))
	u := ac.urls[0] + "/v1/snapshot"
	for _, tt := range []struct {
		name   string
		method string
		hdr    []string
		status int
	}{
		{"no token", "GET", nil, 401},
		{"unknown token", "GET", bearer(unknownSecret), 401},
		{"read token", "GET", bearer(readSecret), 403},
		{"app token", "GET", bearer(appSecret), 403},
		{"app token, HEAD", "HEAD", bearer(appSecret), 403},
		{"admin token, POST", "POST", bearer(adminSecret), 405},
		{"admin token, DELETE", "DELETE", bearer(adminSecret), 405},
		{"admin token", "GET", bearer(adminSecret), 200},
	} {
		r := do(t, tt.method, u, "", tt.hdr...)
		if r.status != tt.status {
			t.Errorf("%s %s: got %d %s, want %d", tt.method, tt.name, r.status, r.body, tt.status)
			continue
		}
		checkRefusal(t, tt.name, r)
		if tt.status == 200 {
			if _, _, err := raftstore.VerifyBackup(strings.NewReader(r.body)); err != nil {
				t.Errorf("%s: the body is not a valid backup: %v", tt.name, err)
			}
		}
	}
}

// TestAPISnapshotCluster: GET /v1/snapshot on a follower of a real cluster
// answers a backup file that verifies, whose headers name its index and
// size, and that holds every write acknowledged before the request (its
// index is at least the last write's version).
func TestAPISnapshotCluster(t *testing.T) {
	ac := startAPICluster(t, 3)
	leader := ac.c.WaitLeader(5 * time.Second)
	var last uint64
	for i := 0; i < 20; i++ {
		r := do(t, "PUT", ac.urls[i%3]+"/v1/kv/k"+strconv.Itoa(i), "v")
		if r.status != 200 {
			t.Fatalf("PUT = %d %s", r.status, r.body)
		}
		last, _ = strconv.ParseUint(strings.Trim(r.header.Get("ETag"), `"`), 10, 64)
	}
	r := do(t, "GET", ac.urls[(leader+1)%3]+"/v1/snapshot", "")
	if r.status != 200 || r.header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("GET /v1/snapshot = %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	meta, size, err := raftstore.VerifyBackup(strings.NewReader(r.body))
	if err != nil {
		t.Fatalf("the body is not a valid backup: %v", err)
	}
	if got := r.header.Get(HeaderSnapshotIndex); got != strconv.FormatUint(meta.Index, 10) || meta.Index < last {
		t.Fatalf("%s: %s, metadata index %d; want them equal and at least the last write's %d", HeaderSnapshotIndex, got, meta.Index, last)
	}
	if cl := r.header.Get("Content-Length"); cl != strconv.FormatInt(size, 10) {
		t.Fatalf("Content-Length %s, body %d bytes", cl, size)
	}
}
