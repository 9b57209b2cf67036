package localcluster

import (
	"crypto/sha256"
	"hash"

	"github.com/idemgate/idemgate/fsm"
)

// StateHash is a SHA-256 over the snapshot f would write now: its applied
// index and every bucket's pairs, in key order (the stream holds the live
// data only, so two replicas that applied the same log hash the same
// whatever their files' pages look like).
func StateHash(f *fsm.FSM) ([32]byte, error) {
	s := &hashSink{h: sha256.New()}
	var sum [32]byte
	if err := f.SnapshotTo(s); err != nil {
		return sum, err
	}
	copy(sum[:], s.h.Sum(nil))
	return sum, nil
}

// hashSink is a raft.SnapshotSink that hashes what is written to it.
type hashSink struct{ h hash.Hash }

func (s *hashSink) Write(p []byte) (int, error) { return s.h.Write(p) }
func (s *hashSink) Close() error                { return nil }
func (s *hashSink) ID() string                  { return "state-hash" }
func (s *hashSink) Cancel() error               { return nil }
