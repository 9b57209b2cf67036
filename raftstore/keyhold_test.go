package raftstore

import (
	"bytes"
	"errors"
	"sync"

	"github.com/hashicorp/raft"
)

// keyHold holds the log writes of a test cluster's nodes that carry any of
// the test's keys (so no other entry, a sweep or the cluster's own facts,
// is ever held), and notes what each node has stored durably.
type keyHold struct {
	keys [][]byte

	mu      sync.Mutex
	gates   map[string]chan struct{}   // node → closed to release its held writes
	blocked map[string]int             // node → writes waiting at its gate now
	durable map[string]map[string]bool // node → test keys whose entry it stored
	fail    map[string]int             // node → writes of test keys still to fail
}

// errInjectedWrite is the log write failure keyHold injects.
var errInjectedWrite = errors.New("injected: the log write failed")

// failNext makes node's next n log writes of test keys fail, unwritten.
func (h *keyHold) failNext(node string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fail[node] = n
}

func newKeyHold(keys [][]byte) *keyHold {
	return &keyHold{keys: keys, gates: map[string]chan struct{}{}, blocked: map[string]int{},
		durable: map[string]map[string]bool{}, fail: map[string]int{}}
}

func (h *keyHold) hold(node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gates[node] = make(chan struct{})
}

func (h *keyHold) release(node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if g := h.gates[node]; g != nil {
		close(g)
		delete(h.gates, node)
	}
}

func (h *keyHold) releaseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for n, g := range h.gates {
		close(g)
		delete(h.gates, n)
	}
}

// has reports whether node has stored the entry holding key.
func (h *keyHold) has(node string, key []byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.durable[node][string(key)]
}

// keysIn lists the test keys the entries of logs hold.
func (h *keyHold) keysIn(logs []*raft.Log) []string {
	var in []string
	for _, l := range logs {
		for _, k := range h.keys {
			if bytes.Contains(l.Data, k) {
				in = append(in, string(k))
			}
		}
	}
	return in
}

// keyHeldLogStore is a node's real log store (raft-boltdb) behind a
// keyHold.
type keyHeldLogStore struct {
	raft.LogStore
	node string
	h    *keyHold
}

func (s *keyHeldLogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *keyHeldLogStore) StoreLogs(logs []*raft.Log) error {
	keys := s.h.keysIn(logs)
	s.h.mu.Lock()
	gate := s.h.gates[s.node]
	if len(keys) == 0 {
		gate = nil
	}
	if gate != nil {
		s.h.blocked[s.node]++
	}
	failNow := len(keys) > 0 && s.h.fail[s.node] > 0
	if failNow {
		s.h.fail[s.node]--
	}
	s.h.mu.Unlock()
	if failNow {
		return errInjectedWrite
	}
	if gate != nil {
		<-gate
		s.h.mu.Lock()
		s.h.blocked[s.node]--
		s.h.mu.Unlock()
	}
	if err := s.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	// Noted only once the write (and its fsync) returned.
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	for _, k := range keys {
		if s.h.durable[s.node] == nil {
			s.h.durable[s.node] = map[string]bool{}
		}
		s.h.durable[s.node][k] = true
	}
	return nil
}

func (s *keyHeldLogStore) IsMonotonic() bool {
	m, ok := s.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
