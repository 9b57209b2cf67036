package datadir

import (
	"errors"
	"fmt"
	"os"
	"time"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/internal/boltcheck"
)

// OpenLogStore checks the Raft log's bbolt file (see package boltcheck:
// bbolt crashes the process on a damaged file, at every restart) and opens
// it. bbolt's consistency check runs on files up to
// boltcheck.FullCheckMaxBytes; the log is fsynced, so an unclean stop does
// not call for it. Unlike fsm.db, the log cannot be rebuilt on this node:
// it holds entries and votes the cluster counted on, so the node refuses
// to start and the fix is a new copy from the leader.
//
// The check reads the whole file in order first, so bbolt's open finds it
// in the page cache when it rebuilds the free list. The free list is not
// written at a clean close, as fsm.db's is: raft-boltdb keeps its bbolt
// handle to itself, and BenchmarkLogStoreColdOpen found no time to save.
func OpenLogStore(path string, noSync bool) (logs *raftboltdb.BoltStore, err error) {
	if st, statErr := os.Stat(path); statErr == nil {
		err := boltcheck.Check(path, st.Size() <= boltcheck.FullCheckMaxBytes)
		var d *boltcheck.Damage
		if errors.As(err, &d) {
			return nil, logStoreDamaged(path, d)
		}
		if err != nil {
			return nil, fmt.Errorf("datadir: check %s: %w", path, err)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			logs, err = nil, logStoreDamaged(path, &boltcheck.Damage{Problem: fmt.Sprintf("bbolt panicked opening it: %v", r)})
		}
	}()
	logs, err = raftboltdb.New(raftboltdb.Options{
		Path:        path,
		BoltOptions: &bolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType},
		NoSync:      noSync,
	})
	if err != nil {
		return nil, fmt.Errorf("datadir: log store: %w", err)
	}
	return logs, nil
}

func logStoreDamaged(path string, d *boltcheck.Damage) error {
	return fmt.Errorf("%s is damaged: %w; remove this node's data dir and re-add the node to the cluster (it gets a full copy from the leader)", path, d)
}
