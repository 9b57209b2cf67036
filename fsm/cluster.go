package fsm

import (
	"encoding/binary"
	"sort"
	"time"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// RemovedNode is a node id the cluster removed, and the certificates it
// was seen with.
type RemovedNode struct {
	ID           string
	At           time.Time // the state machine's clock when it was recorded
	Fingerprints []command.Fingerprint
}

// maxRemovedFingerprints bounds the certificates kept per removed id (the
// newest are kept): a node renews its certificate a few times a year.
const maxRemovedFingerprints = 64

var (
	bucketRemoved = []byte("removed") // node id -> recorded at (8) | fingerprints (32 each)
	keyClusterID  = []byte("cluster_id")
)

// clusterID gives the cluster its id unless it has one; the result carries
// the id in force.
func (a *applier) clusterID(tx *bolt.Tx, c *command.Command, _ uint64) *command.Result {
	meta := tx.Bucket(bucketMeta)
	if cur := meta.Get(keyClusterID); len(cur) == len(command.ClusterID{}) {
		return &command.Result{Code: command.CodeExists, Value: clone(cur)}
	}
	if err := meta.Put(keyClusterID, clone(c.Value)); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	a.clusterSet = command.ClusterID(c.Value)
	return &command.Result{Code: command.CodeCreated, Value: clone(c.Value)}
}

// memberRemoved records a removed node id, merging its fingerprints with
// those recorded before (a node removed twice).
func (a *applier) memberRemoved(tx *bolt.Tx, c *command.Command, _ uint64) *command.Result {
	b := tx.Bucket(bucketRemoved)
	fps := splitFingerprints(c.Value)
	if old := b.Get(c.Key); len(old) >= 8 {
		fps = append(splitFingerprints(old[8:]), fps...)
	}
	fps = uniqueFingerprints(fps)
	if len(fps) > maxRemovedFingerprints {
		fps = fps[len(fps)-maxRemovedFingerprints:]
	}
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(fps)*32), uint64(a.now))
	for _, fp := range fps {
		v = append(v, fp[:]...)
	}
	if err := b.Put(clone(c.Key), v); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK}
}

func splitFingerprints(b []byte) []command.Fingerprint {
	var out []command.Fingerprint
	for len(b) >= 32 {
		out = append(out, command.Fingerprint(b[:32]))
		b = b[32:]
	}
	return out
}

// uniqueFingerprints drops repeats, keeping the last occurrence's place.
func uniqueFingerprints(fps []command.Fingerprint) []command.Fingerprint {
	seen := map[command.Fingerprint]bool{}
	out := make([]command.Fingerprint, 0, len(fps))
	for i := len(fps) - 1; i >= 0; i-- {
		if !seen[fps[i]] {
			seen[fps[i]] = true
			out = append(out, fps[i])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// ClusterID is the cluster's id as this replica has applied it (zero until
// the first leader gave one).
func (f *FSM) ClusterID() command.ClusterID {
	if p := f.cluster.Load(); p != nil {
		return *p
	}
	return command.ClusterID{}
}

// RemovedNodes lists the node ids the cluster removed, by id.
func (f *FSM) RemovedNodes() ([]RemovedNode, error) {
	var out []RemovedNode
	err := f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRemoved).ForEach(func(k, v []byte) error {
			if len(v) < 8 {
				return nil
			}
			out = append(out, RemovedNode{ID: string(k), At: time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(),
				Fingerprints: splitFingerprints(v[8:])})
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, err
}

// ClearClusterID removes the cluster id from a state machine that nothing
// applies to (a restore: the restored state starts a new cluster, which
// gets an id of its own).
func (f *FSM) ClearClusterID() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.db == nil {
		return command.ErrStorage
	}
	if err := f.flush(); err != nil {
		return err
	}
	err := f.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete(keyClusterID) })
	if err == nil {
		f.cluster.Store(nil)
	}
	return err
}

// loadClusterID reads the stored id into the cache.
func (f *FSM) loadClusterID(meta *bolt.Bucket) {
	if v := meta.Get(keyClusterID); len(v) == len(command.ClusterID{}) {
		id := command.ClusterID(v)
		f.cluster.Store(&id)
		return
	}
	f.cluster.Store(nil)
}

// The applier's rows of this file's commands (commands.go joins them).
var clusterApplies = applies{
	command.TypeClusterID:     {apply: (*applier).clusterID},
	command.TypeMemberRemoved: {apply: (*applier).memberRemoved},
}
