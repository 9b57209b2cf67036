package raftstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/backup"
	"github.com/idemgate/idemgate/storeapi"
)

// Backup takes a backup of this node's state machine after a linearizable
// barrier, so every write acknowledged before the call is in it.
//
// It is spooled to an unlinked file in the data directory before it is
// returned, not streamed from the state machine as the caller reads: the
// snapshot is a bbolt read transaction, and a bbolt commit that must grow
// the file waits for every open read transaction, so a backup read by a
// slow client would stall this node's applies for as long as the client
// takes. Spooled, the transaction lasts as long as a local copy; the file
// costs disk, not memory, and is refused when the disk guard would be
// crossed.
func (s *Store) Backup(ctx context.Context) (*storeapi.Backup, error) {
	if err := s.checkDisk(); err != nil {
		return nil, err
	}
	if st, err := os.Stat(filepath.Join(s.cfg.DataDir, "fsm.db")); err == nil && s.cfg.MinFreeBytes > 0 {
		if free, err := freeBytes(s.cfg.DataDir); err == nil && free < uint64(st.Size())+s.cfg.MinFreeBytes {
			return nil, fmt.Errorf("%w: a backup needs about %d bytes in %s, and %d are free", storeapi.ErrDiskFull, st.Size(), s.cfg.DataDir, free)
		}
	}
	if err := s.Barrier(ctx); err != nil {
		return nil, err
	}
	var servers []backup.Server
	if f := s.raft.GetConfiguration(); f.Error() == nil {
		for _, srv := range f.Configuration().Servers {
			servers = append(servers, backup.Server{ID: string(srv.ID), Raft: string(srv.Address), Voter: srv.Suffrage == raft.Voter})
		}
	}
	snap, err := s.fsm.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("raftstore: backup: %w", err)
	}
	defer snap.Release()
	f, err := backup.Spool(s.cfg.DataDir, snap, backup.Meta{Term: s.raft.CurrentTerm(), Servers: servers, Node: s.cfg.NodeID})
	if err != nil {
		return nil, err
	}
	return &storeapi.Backup{ReadCloser: f, Index: f.Meta.Index, Term: f.Meta.Term, Size: f.Size}, nil
}
