package raftstore

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/idemgate/idemgate/command"
)

// diskWatch holds and watches the log writes of a test cluster's nodes:
// a held node's write waits (its disk stalls before the write, so the
// entries are not durable there), and every write that returned is noted
// with the test keys its entries hold.
type diskWatch struct {
	keys [][]byte

	mu      sync.Mutex
	held    map[string]chan struct{}       // node → closed to release it
	waiting map[string]int                 // node → writes waiting, held
	durable map[string]map[string]bool     // node → keys it has stored
	entries map[string]map[uint64]struct{} // node → stored entries holding test keys
}

func newDiskWatch(keys [][]byte) *diskWatch {
	return &diskWatch{keys: keys, held: map[string]chan struct{}{}, waiting: map[string]int{},
		durable: map[string]map[string]bool{}, entries: map[string]map[uint64]struct{}{}}
}

func (w *diskWatch) hold(node string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held[node] = make(chan struct{})
}

func (w *diskWatch) release(node string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if g := w.held[node]; g != nil {
		close(g)
		delete(w.held, node)
	}
}

func (w *diskWatch) releaseAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for n, g := range w.held {
		close(g)
		delete(w.held, n)
	}
}

// heldLogStore is a node's real log store (raft-boltdb) behind the watch.
type heldLogStore struct {
	raft.LogStore
	node string
	w    *diskWatch
}

func (h *heldLogStore) StoreLog(l *raft.Log) error { return h.StoreLogs([]*raft.Log{l}) }

func (h *heldLogStore) StoreLogs(logs []*raft.Log) error {
	h.w.mu.Lock()
	gate := h.w.held[h.node]
	if gate != nil {
		h.w.waiting[h.node]++
	}
	h.w.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if err := h.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	// Noted only once the write (and its fsync) returned: from here on,
	// these entries are durable on this node.
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	for _, l := range logs {
		for _, k := range h.w.keys {
			if !bytes.Contains(l.Data, k) {
				continue
			}
			if h.w.durable[h.node] == nil {
				h.w.durable[h.node], h.w.entries[h.node] = map[string]bool{}, map[uint64]struct{}{}
			}
			h.w.durable[h.node][string(k)] = true
			h.w.entries[h.node][l.Index] = struct{}{}
		}
	}
	return nil
}

func (h *heldLogStore) IsMonotonic() bool {
	m, ok := h.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// TestOverlappingBatchWaitsForQuorum: with more than one batch in flight
// (Config.MaxBatchesInFlight), a batch proposed while its predecessor is
// still replicating is acknowledged only once a quorum has it durably. On
// a real 3-node cluster, both followers' disks are held before their log
// writes; commands to the leader, sent in three waves, make three batches
// that the leader has written while neither follower has: no command is
// answered.
// Then one follower's disk is released: every command is answered
// Created, and at each answer the command's entry was durable on the
// leader and on the released follower (the held one still has none).
func TestOverlappingBatchWaitsForQuorum(t *testing.T) {
	const commands = 32
	keys := make([][]byte, commands)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("overlap-key-%03d", i))
	}
	w := newDiskWatch(keys)
	c := StartTestCluster(t, 3, func(cfg *Config) {
		cfg.MaxBatchesInFlight = 4
		// Followers held at their disk still answer heartbeats (raft's
		// fast path), but on a loaded machine a short lease can lapse
		// and depose the leader, and held followers cannot elect one:
		// timeouts well above the machine's stalls.
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 2*time.Second, 2*time.Second, time.Second
		node := cfg.NodeID
		cfg.wrapLogStore = func(s raft.LogStore) raft.LogStore { return &heldLogStore{LogStore: s, node: node, w: w} }
	})
	t.Cleanup(w.releaseAll) // before the cluster closes (cleanups run last first)
	leader := c.WaitLeader(5 * time.Second)
	ls := c.Stores[leader]
	leaderID := c.Cfgs[leader].NodeID
	var followers []string
	for i, cfg := range c.Cfgs {
		if i != leader {
			followers = append(followers, cfg.NodeID)
			w.hold(cfg.NodeID)
		}
	}

	type answer struct {
		key      string
		res      *command.Result
		err      error
		durable  bool // on the leader and a follower when answered
		quorumOf []string
	}
	answers := make(chan answer, commands)
	send := func(keys [][]byte) {
		for _, k := range keys {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				res, err := ls.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: k, Value: []byte("v"), Mode: command.SetNX}))
				a := answer{key: string(k), res: res, err: err}
				w.mu.Lock()
				for _, f := range followers {
					if w.durable[f][string(k)] {
						a.quorumOf = append(a.quorumOf, f)
					}
				}
				a.durable = w.durable[leaderID][string(k)] && len(a.quorumOf) > 0
				w.mu.Unlock()
				answers <- a
			}()
		}
	}
	// waitLeaderEntries waits (bounded) until the leader has durably
	// written n entries of these commands while both followers are held
	// at their disks.
	waitLeaderEntries := func(n int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			w.mu.Lock()
			leaderEntries := len(w.entries[leaderID])
			blocked := w.waiting[followers[0]] > 0 && w.waiting[followers[1]] > 0
			w.mu.Unlock()
			if leaderEntries >= n && blocked {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("not %d batches in flight: the leader stored %d entries of the commands, followers held: %v, still leader: %v",
					n, leaderEntries, blocked, ls.IsLeader())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Three waves, each sent once the leader has stored the one before
	// (however fast the commands gather, each wave is a batch of its own):
	// with one batch in flight the second wave would wait for the first
	// batch's quorum, which the held followers never give.
	send(keys[:1])
	waitLeaderEntries(1)
	send(keys[1:16])
	waitLeaderEntries(2)
	send(keys[16:])
	waitLeaderEntries(3)
	// A wrong pipeline would answer now; give it the chance (a bound, not
	// an assertion on time).
	select {
	case a := <-answers:
		t.Fatalf("%s answered (%v, %v) while no follower had stored it", a.key, a.res, a.err)
	case <-time.After(300 * time.Millisecond):
	}

	w.release(followers[0])
	for i := 0; i < commands; i++ {
		a := <-answers
		if a.err != nil {
			t.Fatalf("%s: %v", a.key, a.err)
		}
		if a.res.Code != command.CodeCreated {
			t.Fatalf("%s answered %v, want Created", a.key, a.res.Code)
		}
		if !a.durable {
			t.Fatalf("%s answered before a quorum stored it (durable on followers %v)", a.key, a.quorumOf)
		}
		if len(a.quorumOf) != 1 || a.quorumOf[0] != followers[0] {
			t.Fatalf("%s durable on followers %v, want only the released %s", a.key, a.quorumOf, followers[0])
		}
	}
	w.mu.Lock()
	leaderEntries, stillHeld := len(w.entries[leaderID]), len(w.entries[followers[1]])
	w.mu.Unlock()
	if leaderEntries < 3 || stillHeld != 0 {
		t.Fatalf("the leader stored %d entries of the commands, the held follower %d; want ≥ 3 and 0", leaderEntries, stillHeld)
	}
}
