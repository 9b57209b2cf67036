package backup

import (
	"fmt"
	"path/filepath"

	"github.com/idemgate/idemgate/datadir"
	"github.com/idemgate/idemgate/fsm"
)

// CompactInfo is what Compact did: fsm.db's size before and after.
type CompactInfo struct {
	Before, After int64
}

// Compact rewrites a stopped node's state machine file to hold only its
// live data (fsm.Compact), as etcd's defrag does: after a mass expiry the
// file keeps its largest size until then. The data directory's lock keeps
// it from running beside the node; the file is opened and closed first, so
// a file left by a crash is checked (and repaired from the node's snapshot
// and log at the next start, as always) before it is rewritten. Run as
// root, it leaves the file to the directory's owner.
func Compact(cfg Config) (CompactInfo, error) {
	if cfg.DataDir == "" {
		return CompactInfo{}, fmt.Errorf("backup: compact: DataDir is empty")
	}
	uid, gid, err := datadir.Owner(cfg.DataDir)
	if err != nil {
		return CompactInfo{}, err
	}
	unlock, err := datadir.Lock(cfg.DataDir)
	if err != nil {
		return CompactInfo{}, err
	}
	defer unlock()
	f, err := cfg.openFSM()
	if err != nil {
		return CompactInfo{}, fmt.Errorf("backup: compact: %w", err)
	}
	if err := f.Close(); err != nil {
		return CompactInfo{}, fmt.Errorf("backup: compact: %w", err)
	}
	before, after, err := fsm.Compact(filepath.Join(cfg.DataDir, "fsm.db"))
	if err != nil {
		return CompactInfo{}, err
	}
	return CompactInfo{Before: before, After: after}, datadir.KeepOwner(cfg.DataDir, uid, gid)
}
