package resp

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgate/idemgate/command"
)

// heldApply holds a node's apply in its KV observer (in place of the
// listener's own, which only client-side caching needs) from the first
// batch that changes a key until free: the node goes on storing the log,
// so the leader keeps its quorum, but its state stays where it was.
type heldApply struct {
	once, freed sync.Once
	stalled     chan struct{}
	release     chan struct{}
}

func (h *heldApply) KVWatching() bool { return true }

func (h *heldApply) KVChanged([][]byte, []command.ReqID, bool) {
	h.once.Do(func() { close(h.stalled) })
	<-h.release
}

func (h *heldApply) free() { h.freed.Do(func() { close(h.release) }) }

// TestFollowerScriptReadsLeader: redsync's release, sent to a follower
// whose state does not yet hold the lock's owner (its apply held, as a
// follower's lags the leader's by a batch), reads the leader's state and
// releases the lock; a script that wrote nothing is answered after a
// barrier; a script that calls KEYS, which lists this node's
// keys, runs from this node's state after a barrier, as before. The old
// release waited first for a read index this follower could not apply,
// and answered its timeout.
func TestFollowerScriptReadsLeader(t *testing.T) {
	tc := startCluster(t, nil)
	li := tc.rc.WaitLeader(5 * time.Second)
	fi := (li + 1) % 3
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader := redis.NewClient(&redis.Options{Addr: tc.addrs[li]})
	follower := redis.NewClient(&redis.Options{Addr: tc.addrs[fi], ReadTimeout: 20 * time.Second})
	defer leader.Close()
	defer follower.Close()
	h := &heldApply{stalled: make(chan struct{}), release: make(chan struct{})}
	tc.rc.Stores[fi].OnKVChanged(h)
	defer h.free()
	if err := leader.Set(ctx, "held:stall", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	<-h.stalled
	if err := follower.Set(ctx, "held:lock", "token-1", time.Minute).Err(); err != nil {
		t.Fatal(err) // forwarded: the leader applied it, this follower has not
	}
	const release = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	if n, err := follower.Eval(ctx, release, []string{"held:lock"}, "token-1").Int(); err != nil || n != 1 {
		t.Fatalf("release on the held follower = %d, %v; want 1", n, err)
	}
	if err := leader.Get(ctx, "held:lock").Err(); err != redis.Nil {
		t.Fatalf("GET of the released lock = %v, want nil", err)
	}
	h.free()
	// A script that wrote nothing is answered once what it read holds
	// after a barrier here.
	if err := follower.Set(ctx, "held:lock", "token-3", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := follower.Eval(ctx, release, []string{"held:lock"}, "token-2").Int(); err != nil || n != 0 {
		t.Fatalf("release by another owner = %d, %v; want 0", n, err)
	}
	// More keys than a run reads from the leader: the rest are read here,
	// after a barrier, and the values are the leader's all the same.
	var names []string
	for i := 0; i < 2*maxLeaderReads; i++ {
		names = append(names, fmt.Sprintf("held:many:%d", i))
		if err := leader.Set(ctx, names[i], i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	many := `local out = redis.call("mget", unpack(KEYS)) redis.call("set", "held:many:sum", #out) return out`
	vals, err := follower.Eval(ctx, many, names).StringSlice()
	if err != nil || len(vals) != len(names) {
		t.Fatalf("MGET of %d keys in a script on the follower = %q, %v", len(names), vals, err)
	}
	for i, v := range vals {
		if v != fmt.Sprint(i) {
			t.Fatalf("MGET of %d keys in a script on the follower = %q; want 0 to %d", len(names), vals, len(names)-1)
		}
	}
	if err := leader.Del(ctx, append(names, "held:many:sum")...).Err(); err != nil {
		t.Fatal(err)
	}
	keys := `return redis.call("keys", "held:*")`
	got, err := follower.Eval(ctx, keys, nil).StringSlice()
	if err != nil || len(got) != 2 {
		t.Fatalf("KEYS in a script on the follower = %q, %v; want held:stall and held:lock", got, err)
	}
}
