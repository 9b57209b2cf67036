package raftstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// TestReservedKeysRefused: on a 3-node cluster, from the leader and from a
// follower, every KV operation a face can call refuses a key that begins
// with a NUL byte (storeapi.ErrReservedKey) without proposing it, reads included;
// in a pipeline the reserved op alone is refused and the others apply.
// idemgate's own record there (a member's API address) is written and read
// through SetNodeAPI and NodeAPI only, and no attempt changed it.
func TestReservedKeysRefused(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	leader := c.WaitLeader(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Stores[leader].SetNodeAPI(ctx, "n9", "127.0.0.9:9001"); err != nil {
		t.Fatal(err)
	}
	// Another keyspace's stored key (the Redis face's SELECT): refused on
	// the API's path, taken on the Redis face's, and never listed among
	// keyspace 0's keys (the listing below).
	ks := command.KeyspaceKey(1, []byte("a"))
	if res, err := c.Stores[leader].ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: ks, Value: []byte("evil")})); !errors.Is(err, storeapi.ErrReservedKey) {
		t.Fatalf("ApplyKV of keyspace 1's key = %+v, %v; want ErrReservedKey", res, err)
	}
	if r := c.Stores[leader].ApplyInOrder(ctx, []*command.Command{command.KVSetCommand(command.KVSetRequest{Key: ks, Value: []byte("one")})}); r[0].Err != nil {
		t.Fatalf("ApplyInOrder of keyspace 1's key: %v", r[0].Err)
	}
	if e, err := c.Stores[leader].KV(ctx, ks, false); err != nil || string(e.Value) != "one" {
		t.Fatalf("KV of keyspace 1's key = %q, %v", e.Value, err)
	}
	for _, i := range []int{leader, (leader + 1) % 3} {
		s := c.Stores[i]
		commit, _ := s.Indexes()
		for _, key := range [][]byte{NodeAPIKey("n9"), []byte("\x00"), []byte("\x00other")} {
			_, getErr := s.KV(ctx, key, false)
			_, localErr := s.KV(ctx, key, true)
			for what, err := range map[string]error{"KV": getErr, "KV local": localErr} {
				if !errors.Is(err, storeapi.ErrReservedKey) {
					t.Fatalf("node %d: %s(%q) = %v, want ErrReservedKey", i, what, key, err)
				}
			}
			writes := map[string]*command.Command{
				"set":         command.KVSetCommand(command.KVSetRequest{Key: key, Value: []byte("evil")}),
				"set NX":      command.KVSetCommand(command.KVSetRequest{Key: key, Value: []byte("evil"), Mode: command.SetNX}),
				"set GET":     command.KVSetCommand(command.KVSetRequest{Key: key, Value: []byte("evil"), ReturnOld: true}),
				"getdel":      command.KVGetDelCommand(key, 0),
				"incr":        command.KVIncrCommand(key, 1),
				"expire":      command.KVExpireCommand(key, 0, command.FlagExpireNow),
				"delete":      command.KVDeleteCommand(key),
				"append":      command.KVAppendCommand(key, []byte("evil"), 1024),
				"incrbyfloat": command.KVIncrFloatCommand(key, []byte("1.5")),
			}
			for what, c := range writes {
				if res, err := s.ApplyKV(ctx, c); !errors.Is(err, storeapi.ErrReservedKey) || res != nil {
					t.Fatalf("node %d: ApplyKV(%s %q) = %+v, %v; want ErrReservedKey", i, what, key, res, err)
				}
			}
			res := s.ApplyInOrder(ctx, []*command.Command{command.KVSetCommand(command.KVSetRequest{Key: []byte("before"), Value: []byte("1")}),
				command.KVDeleteCommand(key), writes["set NX"], command.KVIncrCommand([]byte("after"), 1)})
			if res[0].Err != nil || res[3].Err != nil || !errors.Is(res[1].Err, storeapi.ErrReservedKey) || res[1].Res != nil ||
				!errors.Is(res[2].Err, storeapi.ErrReservedKey) || res[2].Res != nil {
				t.Fatalf("node %d: ApplyInOrder = %+v, want the reserved ops alone refused", i, res)
			}
		}
		// The refusals proposed nothing: the pipelines' two ops each are all
		// the log gained, with room for an idle leader's empty entries.
		if now, _ := s.Indexes(); now > commit+3*2+4 {
			t.Fatalf("node %d: the commit index went from %d to %d", i, commit, now)
		}
		if err := s.Barrier(ctx); err != nil {
			t.Fatal(err)
		}
		if addr, ok := s.NodeAPI("n9"); !ok || addr != "127.0.0.9:9001" {
			t.Fatalf("node %d: NodeAPI(n9) = %q, %v", i, addr, ok)
		}
		var listed []string
		if err := s.EachKV(ctx, false, storeapi.FirstKVKey, func(k []byte) bool { listed = append(listed, string(k)); return true }); err != nil ||
			fmt.Sprint(listed) != "[after before]" {
			t.Fatalf("node %d: EachKV listed %q, %v; want the two plain keys alone", i, listed, err)
		}
	}
	if _, ok := c.Stores[leader].NodeAPI("n8"); ok {
		t.Fatal("NodeAPI of a member never recorded")
	}
	if err := storeapi.CheckKVKey([]byte("a\x00b")); err != nil {
		t.Fatalf("a NUL inside a key: %v", err)
	}
}
