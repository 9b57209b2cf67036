package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
)

// TestDamagedStoredResponseIsNotReplayed: a stored response whose bytes
// changed in fsm.db after it was stored (a flipped byte on disk) is
// answered 409 replay-unavailable, on every retry: never the damaged body,
// and never a second call to the upstream. An intact record beside it
// replays as it should, and the API shows the damaged one as such.
func TestDamagedStoredResponseIsNotReplayed(t *testing.T) {
	gc := startClusterGateways(t, 1, "")
	tests := []struct {
		key  string
		harm func(t *testing.T, stored, body []byte) []byte // returns the new stored value; nil: left intact
	}{
		{"intact", nil},
		{"body-byte-flipped", func(t *testing.T, stored, body []byte) []byte {
			i := bytes.Index(stored, body)
			if i < 0 {
				t.Fatal("the body is not in the stored record")
			}
			stored[i+len(body)/2] ^= 0x04 // flipped in place, in the file's bytes
			return stored
		}},
		{"header-byte-flipped", func(t *testing.T, stored, _ []byte) []byte {
			return reencode(t, stored, func(r *command.Record) { r.Headers[0].Value[0] ^= 0x01 })
		}},
		{"status-changed", func(t *testing.T, stored, _ []byte) []byte {
			return reencode(t, stored, func(r *command.Record) { r.Status = 200 })
		}},
	}
	first := map[string]reply{}
	for _, tt := range tests {
		r := send(t, gc.gwURLs[0]+"/pay", `{"amount":1}`, "Idempotency-Key", tt.key, "X-User-Id", "u1")
		if r.Status != 201 {
			t.Fatalf("%s: first request = %d %s", tt.key, r.Status, r.Body)
		}
		first[tt.key] = r
	}

	// Stop the node and damage its file, as a disk would.
	gc.gws[0].Shutdown(context.Background())
	gc.c.Stop(0)
	db, err := bolt.Open(filepath.Join(gc.c.Cfgs[0].DataDir, "fsm.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		records := tx.Bucket([]byte("records"))
		for _, tt := range tests {
			if tt.harm == nil {
				continue
			}
			rk := command.RecordKey("pay", "u1", tt.key)
			v := records.Get(rk)
			if v == nil {
				t.Fatalf("%s: no stored record", tt.key)
			}
			if err := records.Put(rk, tt.harm(t, bytes.Clone(v), []byte(first[tt.key].Body))); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	gc.c.Start(0)
	gc.c.WaitLeader(10 * time.Second)
	again := startGatewaysOver(t, gc.c, []nodeStore{gc.c.Store(0)}, gc.up.Addr)

	for _, tt := range tests {
		for attempt := 1; attempt <= 2; attempt++ { // the first read fills the cache, the second comes from it
			r := send(t, again.gwURLs[0]+"/pay", `{"amount":1}`, "Idempotency-Key", tt.key, "X-User-Id", "u1")
			if tt.harm == nil {
				if r.Status != 201 || r.Body != first[tt.key].Body || r.Header.Get("Idempotent-Replayed") != "true" {
					t.Fatalf("%s, replay %d: got %d %q, want 201 %q replayed", tt.key, attempt, r.Status, r.Body, first[tt.key].Body)
				}
				continue
			}
			if r.Status != 409 || r.ProblemType(t) != "replay-unavailable" {
				t.Fatalf("%s, replay %d: got %d %s, want 409 replay-unavailable", tt.key, attempt, r.Status, r.Body)
			}
			if r.Header.Get("Idempotency-Expires") == "" {
				t.Errorf("%s, replay %d: no Idempotency-Expires", tt.key, attempt)
			}
		}
		if n := gc.up.Executions(tt.key); n != 1 {
			t.Fatalf("%s: upstream executions = %d, want 1", tt.key, n)
		}
		r := do(t, "GET", again.apiURLs[0]+"/v1/records/pay/"+tt.key+"?tenant=u1", "")
		var rec struct {
			Damaged bool `json:"damaged"`
		}
		if err := json.Unmarshal([]byte(r.Body), &rec); err != nil || r.Status != 200 {
			t.Fatalf("%s: GET record = %d %s", tt.key, r.Status, r.Body)
		}
		if want := tt.harm != nil; rec.Damaged != want || strings.Contains(r.Body, `"damaged"`) != want {
			t.Fatalf("%s: GET record = %s, want damaged %v", tt.key, r.Body, want)
		}
	}
}

// reencode decodes a stored record, changes it and encodes it again with
// the checksum it had: what a damaged page that still decodes looks like.
func reencode(t *testing.T, stored []byte, change func(*command.Record)) []byte {
	t.Helper()
	r, err := command.DecodeRecord(stored)
	if err != nil {
		t.Fatal(err)
	}
	r = r.Clone()
	change(r)
	return r.Encode(nil)
}
