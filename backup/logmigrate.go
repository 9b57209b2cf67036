package backup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/datadir"
)

// ErrLogsDiffer: a data directory holds its Raft log in both stores and
// the two do not hold the same log, so neither can be dropped for sure.
var ErrLogsDiffer = errors.New("the two logs differ")

// MigrateInfo is what MigrateLog did.
type MigrateInfo struct {
	From, To string
	// First and Last are the indexes of the log now in To (0, 0: empty).
	First, Last uint64
	// Dropped counts the entries left behind below a gap in the old log,
	// all below the newest snapshot (see MigrateLog).
	Dropped uint64
	// Finished: the data directory held both stores, the same log in
	// each (a migration stopped after its switch), and the old one was
	// removed.
	Finished bool
}

// The stable store's keys hashicorp/raft writes (raft.go): the term and
// the vote. Restore writes CurrentTerm too; nothing else writes any.
var (
	stableUint64Keys = [][]byte{[]byte("CurrentTerm"), []byte("LastVoteTerm")}
	stableBytesKeys  = [][]byte{[]byte("LastVoteCand")}
)

// migrateBatchBytes is about how much log data one append carries while
// copying.
const migrateBatchBytes = 4 << 20

// MigrateLog moves a stopped node's Raft log and stable store (term and
// vote) into the log store to (datadir.LogBolt or datadir.LogWAL) from the
// one its data directory holds; the node's raft.log_store must then be to.
// It copies every entry with its index and term into a new store under a
// temporary name, reopens the copy and compares it entry by entry with the
// old log, and only then switches: a rename of the copy to its own name,
// the directory synced, then the old store removed. Until the rename, the
// old store is untouched and the node still starts from it; a crash in
// between leaves both stores, which the node refuses to start with, and
// MigrateLog run again checks they hold the same log and finishes.
//
// The data directory's lock keeps it from running beside the node. A log
// already in to is left as it is.
//
// A raft-boltdb log can hold a gap: a follower that installed a snapshot
// far ahead of its log keeps its old entries below the snapshot (Raft
// appends after the gap, and never reads below a snapshot again).
// raft-wal takes only contiguous logs, so the entries below the last gap
// are left behind, once the newest snapshot is found to cover them;
// Dropped counts them.
func MigrateLog(cfg Config, to string) (info MigrateInfo, err error) {
	if err := cfg.Validate(); err != nil {
		return info, err
	}
	if !slices.Contains(datadir.LogStores, to) {
		return info, fmt.Errorf("backup: log migrate: to %q: want one of %s", to, strings.Join(datadir.LogStores, ", "))
	}
	info.To = to
	if _, err := os.Stat(cfg.DataDir); err != nil {
		return info, fmt.Errorf("backup: log migrate: %w", err)
	}
	uid, gid, err := datadir.Owner(cfg.DataDir)
	if err != nil {
		return info, err
	}
	defer func() { // last, once every file is closed
		if err == nil {
			err = datadir.KeepOwner(cfg.DataDir, uid, gid)
		}
	}()
	unlock, err := datadir.Lock(cfg.DataDir)
	if err != nil {
		return info, err
	}
	defer unlock()

	from, err := datadir.FindLog(cfg.DataDir)
	if errors.Is(err, datadir.ErrLogStoreMismatch) {
		return finishMigration(cfg.DataDir, to)
	}
	if err != nil {
		return info, err
	}
	info.From = from
	switch from {
	case "":
		return info, fmt.Errorf("backup: log migrate: %s holds no Raft log (neither %s nor %s/)", cfg.DataDir, datadir.BoltLogFile, datadir.WALDir)
	case to:
		src, err := datadir.OpenLog(cfg.DataDir, from, false)
		if err != nil {
			return info, err
		}
		defer src.Close()
		info.First, info.Last, err = bounds(src)
		return info, err
	}

	final := datadir.LogPath(cfg.DataDir, to)
	tmp := final + ".migrating"
	if err := os.RemoveAll(tmp); err != nil { // a migration that stopped before its switch
		return info, fmt.Errorf("backup: log migrate: %w", err)
	}
	if err := copyLog(cfg.DataDir, from, to, tmp, &info); err != nil {
		os.RemoveAll(tmp)
		return info, err
	}
	// The switch: from here the new store is the node's log.
	if err := os.Rename(tmp, final); err != nil {
		os.RemoveAll(tmp)
		return info, fmt.Errorf("backup: log migrate: %w", err)
	}
	if err := syncDir(cfg.DataDir); err != nil {
		return info, err
	}
	if err := os.RemoveAll(datadir.LogPath(cfg.DataDir, from)); err != nil {
		return info, fmt.Errorf("backup: log migrate: switched to %s, but the old log stays: %w", final, err)
	}
	return info, syncDir(cfg.DataDir)
}

// copyLog copies the log of dir's store from into a new store to at tmp,
// and checks the copy, reopened, against the old log.
func copyLog(dir, from, to, tmp string, info *MigrateInfo) error {
	src, err := datadir.OpenLog(dir, from, false)
	if err != nil {
		return err
	}
	defer src.Close()
	lo, last, err := bounds(src)
	if err != nil {
		return err
	}
	first, err := contiguousFrom(src, lo, last)
	if err != nil {
		return err
	}
	if first > lo {
		if err := coveredBySnapshot(dir, first-1); err != nil {
			return err
		}
		info.Dropped = first - lo
	}
	dst, err := openLogAt(tmp, to)
	if err != nil {
		return err
	}
	err = copyEntries(dst, src, first, last)
	if err == nil {
		err = copyStable(dst, src)
	}
	if cerr := dst.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("backup: log migrate: %w", cerr)
	}
	if err != nil {
		return err
	}
	if dst, err = openLogAt(tmp, to); err != nil {
		return err
	}
	defer dst.Close()
	if err := sameLog(dst, src, first); err != nil {
		return fmt.Errorf("backup: log migrate: the copy does not read back as the log: %w", err)
	}
	info.First, info.Last = first, last
	if last == 0 {
		info.First = 0
	}
	return nil
}

// finishMigration ends a migration stopped after its switch: dir holds
// both stores. Their logs are compared and the one that is not to removed.
func finishMigration(dir, to string) (MigrateInfo, error) {
	info := MigrateInfo{To: to, Finished: true}
	for _, kind := range datadir.LogStores {
		if kind != to {
			info.From = kind
		}
	}
	keep, err := openLogAt(datadir.LogPath(dir, to), to)
	if err != nil {
		return info, err
	}
	defer keep.Close()
	old, err := openLogAt(datadir.LogPath(dir, info.From), info.From)
	if err != nil {
		return info, err
	}
	info.First, info.Last, err = bounds(keep)
	if err == nil {
		err = sameLog(keep, old, info.First)
	}
	old.Close()
	if err != nil {
		return info, fmt.Errorf("%w: %s and %s: %w; move the one this node did not run on aside by hand", ErrLogsDiffer,
			datadir.LogPath(dir, to), datadir.LogPath(dir, info.From), err)
	}
	if err := os.RemoveAll(datadir.LogPath(dir, info.From)); err != nil {
		return info, fmt.Errorf("backup: log migrate: %w", err)
	}
	return info, syncDir(dir)
}

// openLogAt opens the log store kind at path, whatever its name.
func openLogAt(path, kind string) (datadir.LogStore, error) {
	if kind == datadir.LogWAL {
		return datadir.OpenWAL(path, false)
	}
	b, err := datadir.OpenLogStore(path, false)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func bounds(s raft.LogStore) (first, last uint64, err error) {
	if first, err = s.FirstIndex(); err == nil {
		last, err = s.LastIndex()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("backup: log migrate: %w", err)
	}
	return first, last, nil
}

// contiguousFrom is the first index of the log's last contiguous run that
// ends at last.
func contiguousFrom(s raft.LogStore, first, last uint64) (uint64, error) {
	if last == 0 {
		return first, nil
	}
	var l raft.Log
	for i := last; i >= first && i > 0; i-- {
		err := s.GetLog(i, &l)
		if errors.Is(err, raft.ErrLogNotFound) {
			return i + 1, nil
		}
		if err != nil {
			return 0, fmt.Errorf("backup: log migrate: read entry %d: %w", i, err)
		}
	}
	return first, nil
}

// coveredBySnapshot checks that the node holds a snapshot at or past
// index, so the entries up to it can be left behind.
func coveredBySnapshot(dir string, index uint64) error {
	snaps, err := datadir.SnapshotStore(dir, hclog.NewNullLogger())
	if err != nil {
		return err
	}
	metas, err := snaps.List()
	if err != nil {
		return fmt.Errorf("backup: log migrate: %w", err)
	}
	if len(metas) == 0 || metas[0].Index < index {
		return fmt.Errorf("backup: log migrate: the log has a gap at index %d that no snapshot covers: it is damaged; remove this node's data dir and re-add the node to the cluster", index)
	}
	return nil
}

// copyEntries appends src's entries first..last to dst, in batches.
func copyEntries(dst, src raft.LogStore, first, last uint64) error {
	if last == 0 {
		return nil
	}
	var batch []*raft.Log
	size := 0
	for i := first; i <= last; i++ {
		l := new(raft.Log)
		if err := src.GetLog(i, l); err != nil {
			return fmt.Errorf("backup: log migrate: read entry %d: %w", i, err)
		}
		batch = append(batch, l)
		size += len(l.Data) + len(l.Extensions) + 64
		if size >= migrateBatchBytes || i == last {
			if err := dst.StoreLogs(batch); err != nil {
				return fmt.Errorf("backup: log migrate: write entries %d-%d: %w", batch[0].Index, i, err)
			}
			batch, size = batch[:0], 0
		}
	}
	return nil
}

// copyStable copies the term and the vote.
func copyStable(dst, src raft.StableStore) error {
	for _, k := range stableUint64Keys {
		v, ok, err := getUint64(src, k)
		if err == nil && ok {
			err = dst.SetUint64(k, v)
		}
		if err != nil {
			return fmt.Errorf("backup: log migrate: %s: %w", k, err)
		}
	}
	for _, k := range stableBytesKeys {
		v, ok, err := get(src, k)
		if err == nil && ok {
			err = dst.Set(k, v)
		}
		if err != nil {
			return fmt.Errorf("backup: log migrate: %s: %w", k, err)
		}
	}
	return nil
}

// sameLog compares b's log from index first on, and its term and vote,
// with a's: a must hold the same entries, no more, no fewer.
func sameLog(a, b logReader, first uint64) error {
	_, alast, err := bounds(a)
	if err != nil {
		return err
	}
	_, blast, err := bounds(b)
	if err != nil {
		return err
	}
	if alast != blast {
		return fmt.Errorf("last index %d, want %d", alast, blast)
	}
	if afirst, _, _ := bounds(a); afirst != first && alast != 0 {
		return fmt.Errorf("first index %d, want %d", afirst, first)
	}
	var x, y raft.Log
	for i := first; i <= alast && alast != 0; i++ {
		if err := a.GetLog(i, &x); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
		if err := b.GetLog(i, &y); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
		if x.Index != y.Index || x.Term != y.Term || x.Type != y.Type || !bytes.Equal(x.Data, y.Data) ||
			!bytes.Equal(x.Extensions, y.Extensions) || !x.AppendedAt.Equal(y.AppendedAt) {
			return fmt.Errorf("entry %d differs (index %d/%d, term %d/%d, %d/%d bytes)", i, x.Index, y.Index, x.Term, y.Term, len(x.Data), len(y.Data))
		}
	}
	for _, k := range stableUint64Keys {
		va, _, erra := getUint64(a, k)
		vb, _, errb := getUint64(b, k)
		if err := errors.Join(erra, errb); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		if va != vb {
			return fmt.Errorf("%s %d, want %d", k, va, vb)
		}
	}
	for _, k := range stableBytesKeys {
		va, _, erra := get(a, k)
		vb, _, errb := get(b, k)
		if err := errors.Join(erra, errb); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		if !bytes.Equal(va, vb) {
			return fmt.Errorf("%s %q, want %q", k, va, vb)
		}
	}
	return nil
}

// logReader is what sameLog reads of a log store.
type logReader interface {
	raft.LogStore
	raft.StableStore
}

// get and getUint64 read a stable key; ok is false when it was never set.
// raft-boltdb answers a missing key with an error "not found" (as
// hashicorp/raft checks for, by its text), raft-wal with an empty value.
func get(s raft.StableStore, k []byte) (v []byte, ok bool, err error) {
	v, err = s.Get(k)
	if err != nil && err.Error() == "not found" {
		return nil, false, nil
	}
	return v, err == nil && len(v) > 0, err
}

func getUint64(s raft.StableStore, k []byte) (v uint64, ok bool, err error) {
	if _, ok, err = get(s, k); err != nil || !ok {
		return 0, false, err
	}
	v, err = s.GetUint64(k)
	return v, err == nil, err
}
