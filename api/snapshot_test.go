package api

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/backup"
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
		{"read token, POST", "POST", bearer(readSecret), 403},
		{"app token, POST", "POST", bearer(appSecret), 403},
		{"admin token, DELETE", "DELETE", bearer(adminSecret), 405},
		{"admin token, PUT", "PUT", bearer(adminSecret), 405},
		{"admin token, POST", "POST", bearer(adminSecret), 200},
		{"admin token", "GET", bearer(adminSecret), 200},
	} {
		r := do(t, tt.method, u, "", tt.hdr...)
		if r.Status != tt.status {
			t.Errorf("%s %s: got %d %s, want %d", tt.method, tt.name, r.Status, r.Body, tt.status)
			continue
		}
		checkRefusal(t, tt.name, r)
		if tt.status == 405 && r.Header.Get("Allow") != "GET, HEAD, POST" {
			t.Errorf("%s: Allow %q, want GET, HEAD, POST", tt.name, r.Header.Get("Allow"))
		}
		if tt.status == 200 && tt.method == "POST" {
			var info snapshotJSON
			if err := json.Unmarshal([]byte(r.Body), &info); err != nil || !info.New || info.Bytes <= 0 {
				t.Errorf("%s: %s (%v): want a new snapshot with its size", tt.name, r.Body, err)
			}
			continue
		}
		if tt.status == 200 {
			if _, _, err := backup.Verify(strings.NewReader(r.Body)); err != nil {
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
		if r.Status != 200 {
			t.Fatalf("PUT = %d %s", r.Status, r.Body)
		}
		last, _ = strconv.ParseUint(strings.Trim(r.Header.Get("ETag"), `"`), 10, 64)
	}
	r := do(t, "GET", ac.urls[(leader+1)%3]+"/v1/snapshot", "")
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("GET /v1/snapshot = %d %q %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	meta, size, err := backup.Verify(strings.NewReader(r.Body))
	if err != nil {
		t.Fatalf("the body is not a valid backup: %v", err)
	}
	if got := r.Header.Get(headerSnapshotIndex); got != strconv.FormatUint(meta.Index, 10) || meta.Index < last {
		t.Fatalf("%s: %s, metadata index %d; want them equal and at least the last write's %d", headerSnapshotIndex, got, meta.Index, last)
	}
	if cl := r.Header.Get("Content-Length"); cl != strconv.FormatInt(size, 10) {
		t.Fatalf("Content-Length %s, body %d bytes", cl, size)
	}
}

// TestAPITakeSnapshotCluster: POST /v1/snapshot makes the node take a Raft
// snapshot now: it covers every write the node applied before the call and
// the node's snapshot store holds it; a second call with nothing new applied takes
// none and describes the newest. Hostile calls change nothing.
func TestAPITakeSnapshotCluster(t *testing.T) {
	ac := startAPICluster(t, 3)
	leader := ac.c.WaitLeader(5 * time.Second)
	var last uint64
	for i := 0; i < 50; i++ {
		r := do(t, "PUT", ac.urls[leader]+"/v1/kv/k"+strconv.Itoa(i), "v")
		if r.Status != 200 {
			t.Fatalf("PUT = %d %s", r.Status, r.Body)
		}
		last, _ = strconv.ParseUint(strings.Trim(r.Header.Get("ETag"), `"`), 10, 64)
	}
	snapshot := func() snapshotJSON {
		t.Helper()
		r := do(t, "POST", ac.urls[leader]+"/v1/snapshot", "")
		var info snapshotJSON
		if r.Status != 200 || r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("POST /v1/snapshot = %d %q %s", r.Status, r.Header.Get("Content-Type"), r.Body)
		}
		if err := json.Unmarshal([]byte(r.Body), &info); err != nil {
			t.Fatalf("POST /v1/snapshot: %s: %v", r.Body, err)
		}
		return info
	}
	first := snapshot()
	if !first.New || first.Index < last || first.Term == 0 || first.Bytes <= 0 {
		t.Fatalf("first snapshot %+v: want a new one at index >= %d with a term and a size", first, last)
	}
	snaps, err := raft.NewFileSnapshotStore(ac.c.Cfgs[leader].DataDir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	metas, err := snaps.List()
	if err != nil || len(metas) == 0 || metas[0].Index != first.Index || metas[0].Size != first.Bytes {
		t.Fatalf("the snapshot store holds %+v (%v); want the newest at index %d, %d bytes", metas, err, first.Index, first.Bytes)
	}
	again := snapshot()
	if again.New || again.Index != first.Index || again.Bytes != first.Bytes {
		t.Fatalf("second snapshot %+v, nothing applied since %+v: want it described, not taken", again, first)
	}
	for _, method := range []string{"PUT", "PATCH", "DELETE"} {
		if r := do(t, method, ac.urls[leader]+"/v1/snapshot", "x"); r.Status != 405 {
			t.Errorf("%s /v1/snapshot = %d %s, want 405", method, r.Status, r.Body)
		}
	}
	if r := do(t, "GET", ac.urls[leader]+"/v1/kv/k49", ""); r.Status != 200 || r.Body != "v" {
		t.Fatalf("after the snapshots GET k49 = %d %q", r.Status, r.Body)
	}
}
