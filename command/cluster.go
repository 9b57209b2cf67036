package command

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// The cluster's own facts, replicated like any state: its identity and the
// node identities it removed.
//
// A cluster id is given once, by the first leader that finds none
// (TypeClusterID is applied only while the state holds no id), so every
// member agrees on it and it survives snapshots, restarts and recovery.
// Nodes refuse Raft traffic from another cluster's id. A restored backup
// is a new cluster: restore clears the id and the new cluster's first
// leader gives it one of its own.
//
// A removed member is remembered by id with the certificate fingerprints
// (SHA-256 of the leaf's DER) the cluster saw it use: those certificates
// are refused everywhere afterwards, so a removed node, or whoever holds
// its key, cannot talk its way back in. Re-adding the id takes a new
// certificate.

// ClusterID identifies one cluster for life; zero is "none yet".
type ClusterID [16]byte

// NewClusterID returns a random cluster id.
func NewClusterID() (ClusterID, error) {
	var id ClusterID
	_, err := rand.Read(id[:])
	return id, err
}

// IsZero reports whether no id is set.
func (id ClusterID) IsZero() bool { return id == ClusterID{} }

// String is the id in hex ("" when zero).
func (id ClusterID) String() string {
	if id.IsZero() {
		return ""
	}
	return hex.EncodeToString(id[:])
}

// ParseClusterID reads the hex form String writes.
func ParseClusterID(s string) (ClusterID, error) {
	var id ClusterID
	if s == "" {
		return id, nil
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("fsm: cluster id %q: want %d hex digits", s, 2*len(id))
	}
	copy(id[:], b)
	return id, nil
}

// Fingerprint is the SHA-256 of a certificate's DER bytes.
type Fingerprint [32]byte
