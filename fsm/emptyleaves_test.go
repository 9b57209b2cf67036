package fsm

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// TestApplyAfterEmptyingTheKeyspace: one batch that deletes every key of a
// keyspace of several pages and then writes keys returns (before the fix
// it never did: bbolt's Cursor.Last, asked whether the write went in
// order, looped forever over the empty leaves, on every node at once; the
// test then ends only at go test's timeout). The same for the bulk path's
// predecessor, and the keys written are there after.
func TestApplyAfterEmptyingTheKeyspace(t *testing.T) {
	h := newHarness(t)
	fill := func() {
		var logs []*raft.Log
		for i := 0; i < 300; i++ {
			logs = append(logs, h.log(*command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprintf("k%04d", i)), Value: []byte(strings.Repeat("v", 100))})))
		}
		h.f.ApplyBatch(logs)
	}
	fill()
	var logs []*raft.Log
	for i := 0; i < 300; i++ {
		logs = append(logs, h.log(*command.KVDeleteCommand([]byte(fmt.Sprintf("k%04d", i)))))
	}
	logs = append(logs, h.log(*command.KVSetCommand(command.KVSetRequest{Key: []byte("z"), Value: []byte("v")})),
		h.log(*command.KVSetCommand(command.KVSetRequest{Key: []byte("a"), Value: []byte("v")})))
	for i, r := range h.f.ApplyBatch(logs) {
		if res, ok := r.(*command.Result); !ok || (res.Code != command.CodeOK && res.Code != command.CodeCreated) {
			t.Fatalf("entry %d: %v", i, r)
		}
	}
	for _, k := range []string{"a", "z"} {
		if _, err := h.f.KV([]byte(k), h.now()); err != nil {
			t.Fatalf("KV(%s) after the batch: %v", k, err)
		}
	}

	fill()
	err := h.f.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKV)
		for i := 0; i < 300; i++ {
			if err := b.Delete([]byte(fmt.Sprintf("k%04d", i))); err != nil {
				return err
			}
		}
		for _, k := range []string{"a", "z"} {
			if err := b.Delete([]byte(k)); err != nil {
				return err
			}
		}
		if p := predecessor(b.Cursor(), []byte("m")); p != nil {
			return fmt.Errorf("predecessor of m in an emptied bucket = %q, want none", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFlushThenWriteInOneBatch: a FLUSHDB step that empties a keyspace of
// several pages, then writes in the same batch (a client writing right
// after its flush), must apply: an emptied bucket's leaves stay empty
// until the commit, where a cursor's Last would spin on every node.
func TestFlushThenWriteInOneBatch(t *testing.T) {
	h := newHarness(t)
	var logs []*raft.Log
	for i := 0; i < 300; i++ {
		logs = append(logs, h.log(*command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprintf("k%04d", i)), Value: []byte(strings.Repeat("v", 100))})))
	}
	h.f.ApplyBatch(logs)
	feed := &feedLog{}
	feed.watching.Store(true)
	h.f.SetKVObserver(feed)
	logs = []*raft.Log{h.log(*command.KVFlushCommand(0, false, 0, nil)),
		h.log(*command.KVSetCommand(command.KVSetRequest{Key: []byte("z"), Value: []byte("v")})),
		h.log(*command.KVSetCommand(command.KVSetRequest{Key: []byte("a"), Value: []byte("v")}))}
	rs := h.f.ApplyBatch(logs)
	if res, ok := rs[0].(*command.Result); !ok || res.Code != command.CodeOK || res.Fence != 300 || len(res.Value) != 0 {
		t.Fatalf("flush step: %+v, want 300 keys deleted in one step", rs[0])
	}
	for i, r := range rs[1:] {
		if res, ok := r.(*command.Result); !ok || res.Code != command.CodeCreated {
			t.Fatalf("write %d after the flush: %v", i, r)
		}
	}
	for _, k := range []string{"a", "z"} {
		if _, err := h.f.KV([]byte(k), h.now()); err != nil {
			t.Fatalf("KV(%s) after the batch: %v", k, err)
		}
	}
	if _, err := h.f.KV([]byte("k0000"), h.now()); !errors.Is(err, command.ErrNotFound) {
		t.Fatalf("a flushed key: %v, want not found", err)
	}
	// A cache of any key is dropped: the observer hears "all".
	if got := feed.take(); len(got) != 1 || got[0] != nil {
		t.Fatalf("the feed after a flush: %q, want one \"all\"", got)
	}
}
