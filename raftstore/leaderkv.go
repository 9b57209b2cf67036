package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/raftstore/transport"
	"github.com/idemgate/idemgate/storeapi"
)

// LeaderKV reads a KV key (of any keyspace) from the leader's applied
// state, judging its expiry at now, as a local read of this node would:
// forwarded when this node follows. The leader answers a write only once
// its own state machine has applied it, so its state holds every write it
// acknowledged, the client's own last one included; a follower may not yet
// hold it, and learns it only with the leader's next batch. This is no
// linearizable read (a deposed leader answers from its own state): it is
// for a caller whose result is checked again in the log, as a script's
// effects are (fsm.Sandbox), where it saves the wait a follower's barrier
// is. false when the key is absent or expired.
func (s *Store) LeaderKV(ctx context.Context, key []byte, now time.Time) (command.KVEntry, bool, error) {
	if err := storeapi.CheckKeyspaceKey(key); err != nil {
		return command.KVEntry{}, false, err
	}
	if s.refuseRemoved() {
		return command.KVEntry{}, false, storeapi.ErrRemoved
	}
	type found struct {
		e  command.KVEntry
		ok bool
	}
	f, err := leaderCall(s, ctx, transport.LeaderKV,
		func() []byte { return append(binary.BigEndian.AppendUint64(nil, uint64(now.UnixNano())), key...) },
		func([]byte) (found, error) { e, ok, err := s.leaderKVLocal(key, now); return found{e, ok}, err },
		func(b []byte) (found, error) { e, ok, err := decodeLeaderKV(b); return found{e, ok}, err })
	return f.e, f.ok, err
}

// leaderKVLocal is LeaderKV on the leader; storeapi.ErrNotLeader elsewhere,
// so that a forwarded read finds the leader.
func (s *Store) leaderKVLocal(key []byte, now time.Time) (command.KVEntry, bool, error) {
	if s.raft.State() != raft.Leader {
		return command.KVEntry{}, false, storeapi.ErrNotLeader
	}
	e, err := s.fsm.KV(key, now)
	if errors.Is(err, command.ErrNotFound) {
		return command.KVEntry{}, false, nil
	}
	return e, err == nil, err
}

// serveLeaderKV answers a forwarded LeaderKV.
func (s *Store) serveLeaderKV(payload []byte) ([]byte, error) {
	if len(payload) < 8 {
		return nil, fmt.Errorf("%w: a leader read of %d bytes", command.ErrBadCommand, len(payload))
	}
	now := time.Unix(0, int64(binary.BigEndian.Uint64(payload)))
	key := payload[8:]
	if err := storeapi.CheckKeyspaceKey(key); err != nil {
		return nil, err
	}
	e, ok, err := s.leaderKVLocal(key, now)
	if err != nil || !ok {
		return nil, err
	}
	return encodeLeaderKV(e), nil
}

// A leader read's answer: empty when absent, else version, created,
// expiry (8 bytes each), kind (1) and the value.
const leaderKVHeader = 25

func encodeLeaderKV(e command.KVEntry) []byte {
	b := make([]byte, leaderKVHeader, leaderKVHeader+len(e.Value))
	binary.BigEndian.PutUint64(b, e.Version)
	binary.BigEndian.PutUint64(b[8:], e.Created)
	binary.BigEndian.PutUint64(b[16:], uint64(e.ExpiresAt))
	b[24] = byte(e.Kind)
	return append(b, e.Value...)
}

func decodeLeaderKV(b []byte) (command.KVEntry, bool, error) {
	switch {
	case len(b) == 0:
		return command.KVEntry{}, false, nil
	case len(b) < leaderKVHeader:
		return command.KVEntry{}, false, fmt.Errorf("a leader read answered %d bytes", len(b))
	}
	return command.KVEntry{
		Version:   binary.BigEndian.Uint64(b),
		Created:   binary.BigEndian.Uint64(b[8:]),
		ExpiresAt: int64(binary.BigEndian.Uint64(b[16:])),
		Kind:      command.Kind(b[24]),
		Value:     append([]byte(nil), b[leaderKVHeader:]...),
	}, true, nil
}
