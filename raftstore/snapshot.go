package raftstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/storeapi"
)

// TakeSnapshot makes this node take a Raft snapshot now and compact its log
// (keeping the trailing entries followers may still need), instead of
// waiting for the snapshot threshold: before a planned maintenance, to
// shorten a restart's log replay, or to measure what a snapshot costs
// under load. It blocks until the snapshot is written or ctx ends; applies
// go on meanwhile (the state machine's snapshot is a read transaction).
func (s *Store) TakeSnapshot(ctx context.Context) (storeapi.SnapshotInfo, error) {
	if err := s.checkDisk(); err != nil {
		return storeapi.SnapshotInfo{}, err
	}
	// Raft takes another snapshot at the same index when asked twice;
	// one is enough.
	if newest, err := s.newestSnapshot(); err != nil || (newest.Index > 0 && newest.Index >= s.raft.AppliedIndex()) {
		return newest, err
	}
	start := time.Now()
	fut := s.raft.Snapshot()
	done := make(chan error, 1)
	go func() { done <- fut.Error() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		return storeapi.SnapshotInfo{}, fmt.Errorf("raftstore: snapshot: %w", ctx.Err())
	}
	switch {
	case errors.Is(err, raft.ErrNothingNewToSnapshot):
		return s.newestSnapshot()
	case errors.Is(err, raft.ErrRaftShutdown):
		return storeapi.SnapshotInfo{}, storeapi.ErrShutdown
	case err != nil:
		return storeapi.SnapshotInfo{}, fmt.Errorf("raftstore: snapshot: %w", err)
	}
	took := time.Since(start)
	meta, rc, err := fut.Open()
	if err != nil {
		return storeapi.SnapshotInfo{}, fmt.Errorf("raftstore: snapshot: %w", err)
	}
	rc.Close()
	return storeapi.SnapshotInfo{Index: meta.Index, Term: meta.Term, Bytes: meta.Size, Took: took, New: true}, nil
}

func (s *Store) newestSnapshot() (storeapi.SnapshotInfo, error) {
	metas, err := s.snaps.List()
	if err != nil {
		return storeapi.SnapshotInfo{}, fmt.Errorf("raftstore: snapshot: %w", err)
	}
	if len(metas) == 0 { // nothing applied yet: there is nothing to take
		return storeapi.SnapshotInfo{}, nil
	}
	m := metas[0]
	return storeapi.SnapshotInfo{Index: m.Index, Term: m.Term, Bytes: m.Size}, nil
}
