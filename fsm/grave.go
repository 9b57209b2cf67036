package fsm

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
)

// Dropping a collection lazily, as Redis's lazyfree does, but in the log.
//
// A header leaves the KV bucket at once, whatever drops it (DEL, UNLINK,
// an overwrite, a lazy or a swept expiry, FLUSH, SINTERSTORE and friends
// over it). Its elements go with it in the same apply while the entry
// has dropped fewer than dropBudget element entries; past that, the
// collection's id goes into the graveyard bucket instead, and the
// elements are reclaimed later, at most reclaimStep of them by each
// reclaiming command (a noop: the leader proposes them while graves
// remain, raftstore's reclaim.go). So no apply deletes more than
// dropBudget + reclaimStep element entries, however large the
// collection: a DEL of a million members costs one header's delete.
//
// Why no reader ever sees a buried collection's elements: every read and
// write of elements goes through a header found in the KV bucket (collOf,
// a sandbox's base), and the header left that bucket in the entry that
// buried its id. Elements are keyed by their collection's id, and an id
// is the revision of the command that made the collection (newColl):
// revisions are unique and only grow (nextRev, stored with the data), so
// no later collection gets a buried id, and no header ever points into
// the graveyard again. (RENAME moves a header with its id and never
// buries it; COPY writes the elements again under a new id.)
//
// Why replicas agree: burying and reclaiming are decisions of apply
// functions over the replicated state, per log entry (the budget is
// counted per entry, not per batch, which differs between nodes), so
// every node's data at a given applied index is the same, graveyard
// included. A snapshot is the data file whole, graveyard and all: a node
// restored from it reclaims the rest with the same entries as the others.
//
// The graveyard: id (8) -> the last element key reclaimed (empty: none
// yet), where the next step seeks, so that a step never walks the leaves
// an earlier step of the same transaction emptied (dropElems says why).

// bucketGraves is the graveyard bucket.
var bucketGraves = []byte("kvgraves")

// Bounds of one apply's element deletes.
const (
	// dropBudget bounds the element entries one log entry deletes along
	// with the headers it drops: a collection that would pass it is
	// buried. A few milliseconds of deletes on an idle machine
	// (BenchmarkDropHuge logs a step's time).
	dropBudget = 1024
	// reclaimStep bounds the element entries one reclaiming command
	// deletes from the graveyard.
	reclaimStep = 1024
)

// elemEntries is how many element entries a collection of kind and
// header h has: a sorted set's members have two each (its score order).
func elemEntries(kind command.Kind, h command.CollHeader) uint64 {
	if kind == command.KindZSet {
		return 2 * h.Count
	}
	return h.Count
}

// dropColl drops the elements of the collection whose stored entry is
// old (its header left, or leaves, the KV bucket in this apply): at once
// while the entry's budget allows, else by burying its id.
func (a *applier) dropColl(tx *bolt.Tx, old command.KVEntry) error {
	h, ok := command.DecodeCollHeader(old.Value)
	if !ok {
		return nil
	}
	n := elemEntries(old.Kind, h)
	if a.dropped+n <= dropBudget {
		a.dropped += n
		return dropElems(tx, h.ID)
	}
	a.graveDelta++
	return tx.Bucket(bucketGraves).Put(binary.BigEndian.AppendUint64(nil, h.ID), []byte{})
}

// reclaim deletes up to reclaimStep element entries of buried
// collections, the oldest id first, and forgets each grave it empties.
func (a *applier) reclaim(tx *bolt.Tx) error {
	graves := tx.Bucket(bucketGraves)
	elems := tx.Bucket(bucketElems)
	left := reclaimStep
	gc := graves.Cursor()
	for id, resume := gc.First(); id != nil && left > 0; id, resume = gc.First() {
		prefix := clone(id)
		from := prefix
		if len(resume) > 0 {
			from = clone(resume)
		}
		last, n, err := deleteFrom(elems, prefix, from, left)
		if err != nil {
			return err
		}
		left -= n
		if left == 0 {
			// Perhaps more: the next step seeks past these.
			return graves.Put(prefix, last)
		}
		a.graveDelta--
		if err := graves.Delete(prefix); err != nil {
			return err
		}
	}
	return nil
}

// Graves is how many dropped collections still have elements to
// reclaim on this node: while it is above 0, the leader proposes
// reclaiming commands (a hint, counted since the data file opened).
func (f *FSM) Graves() int64 { return f.graves.Load() }

// countGraves counts the graveyard (load).
func countGraves(tx *bolt.Tx) int64 {
	return int64(tx.Bucket(bucketGraves).Stats().KeyN)
}
