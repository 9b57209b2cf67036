package raftstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemgate/idemgate/backup"
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/datadir"
	"github.com/idemgate/idemgate/storeapi"
)

// putKeys writes n keys prefix-i = value-i through node i%len of c and
// returns the version each was acknowledged with.
func putKeys(t *testing.T, c *TestCluster, prefix string, n int) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("%s-%d", prefix, i)
		// As a client does: a 503 (an election under way, answered at
		// once) is retried, under the same request id.
		ctx := storeapi.WithRequestID(ctxT(t, 20*time.Second), storeapi.RequestID(context.Background()))
		res, err := c.Store(i%len(c.Cfgs)).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(key), Value: []byte("value-" + key)}))
		for err != nil && storeapi.Unavailable(err) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			res, err = c.Store(i%len(c.Cfgs)).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(key), Value: []byte("value-" + key)}))
		}
		if err != nil {
			t.Fatalf("set %s: %v", key, err)
		}
		out[key] = res.Version
	}
	return out
}

// saveBackup takes a backup through s and writes it to a file; the
// metadata is the file's own, which the index and term the store gave
// with it must match.
func saveBackup(t *testing.T, s *Store) (string, backup.Meta) {
	t.Helper()
	b, err := s.Backup(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	defer b.Close()
	path := filepath.Join(t.TempDir(), "backup.snap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(f, b)
	if err != nil || n != b.Size {
		t.Fatalf("copy backup: %d of %d bytes, %v", n, b.Size, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	meta, _, err := backup.Verify(r)
	if err != nil || meta.Index != b.Index || meta.Term != b.Term {
		t.Fatalf("backup.Verify = %+v, %v; want index %d, term %d as the store said", meta, err, b.Index, b.Term)
	}
	return path, meta
}

// restoredCluster restores path into n new data directories, on new ports,
// and starts them as a new cluster.
func restoredCluster(t *testing.T, path string, n int) *TestCluster {
	t.Helper()
	return StartTestCluster(t, n, func(cfg *Config) {
		if _, err := backup.Restore(cfg.Offline(), path, Voters(cfg.Peers)); err != nil {
			t.Fatalf("restore %s: %v", cfg.NodeID, err)
		}
	})
}

// TestBackupRestoreNewCluster: a backup taken through a follower holds
// every write acknowledged before it; restored on three new nodes it is a
// new cluster holding exactly that state, whose Raft carries on above the
// backup's index and term (versions keep growing, terms never go back).
func TestBackupRestoreNewCluster(t *testing.T) {
	src := StartTestCluster(t, 3, nil)
	acked := putKeys(t, src, "k", 60)
	follower := (src.WaitLeader(5*time.Second) + 1) % 3
	path, meta := saveBackup(t, src.Store(follower))

	if meta.Node != src.Cfgs[follower].NodeID || len(meta.Servers) != 3 || meta.Term == 0 || meta.CreatedAt.IsZero() {
		t.Fatalf("backup metadata = %+v, want node %s, 3 servers, a term and a time", meta, src.Cfgs[follower].NodeID)
	}
	for key, v := range acked {
		if v > meta.Index {
			t.Fatalf("%s was acknowledged at index %d, above the backup's %d", key, v, meta.Index)
		}
	}
	f, _ := os.Open(path)
	vmeta, size, err := backup.Verify(f)
	f.Close()
	if st, _ := os.Stat(path); err != nil || vmeta.Index != meta.Index || size != st.Size() {
		t.Fatalf("backup.Verify = %+v, %d bytes, %v; want index %d, %d bytes", vmeta, size, err, meta.Index, st.Size())
	}
	srcHash, err := src.Store(follower).FSM().DataHash()
	if err != nil {
		t.Fatal(err)
	}

	// The restored cluster holds the backup's data, under a cluster id of
	// its own (its first leader gave one: the only entry it applied).
	dst := restoredCluster(t, path, 3)
	srcID := src.Store(follower).FSM().ClusterID()
	for i := range dst.Cfgs {
		f := dst.Store(i).FSM()
		if h, _ := f.DataHash(); h != srcHash || f.AppliedIndex() < meta.Index {
			t.Fatalf("restored %s: applied %d, data %x; want the source's: applied %d, data %x",
				dst.Cfgs[i].NodeID, f.AppliedIndex(), h[:8], meta.Index, srcHash[:8])
		}
		if id := f.ClusterID(); id.IsZero() || id == srcID {
			t.Fatalf("restored %s: cluster id %s, want a new one (the source's is %s)", dst.Cfgs[i].NodeID, id, srcID)
		}
	}
	for key, v := range acked {
		e, err := dst.Store(1).KV(ctxT(t, 5*time.Second), []byte(key), false)
		if err != nil || string(e.Value) != "value-"+key || e.Version != v {
			t.Fatalf("restored %s = %q v%d, %v; want %q v%d", key, e.Value, e.Version, err, "value-"+key, v)
		}
	}
	after := putKeys(t, dst, "after", 10)
	for key, v := range after {
		if v <= meta.Index {
			t.Fatalf("%s written after the restore got version %d, not above the backup's index %d", key, v, meta.Index)
		}
	}
	l := dst.Store(dst.WaitLeader(5 * time.Second))
	if term := l.Raft().CurrentTerm(); term <= meta.Term {
		t.Fatalf("restored cluster's term %d, want above the backup's %d", term, meta.Term)
	}
	servers, _ := l.Servers()
	if len(servers) != 3 || servers[0].RaftAddr != dst.Cfgs[0].RaftBind {
		t.Fatalf("restored cluster's members = %+v, want its own three nodes", servers)
	}
	dst.WaitConverged(10 * time.Second)
	// The new cluster never talks to the old one: they share nothing.
	if _, err := src.Store(0).KV(ctxT(t, 5*time.Second), []byte("after-0"), false); !errors.Is(err, command.ErrNotFound) {
		t.Fatalf("the source cluster sees a key written to the restored one: %v", err)
	}
}

// TestRecoverLostQuorum: two of three nodes are gone for good; Recover on
// the survivor makes it a one-node cluster holding every acknowledged
// write, which then takes writes and grows again.
func TestRecoverLostQuorum(t *testing.T) {
	c := StartTestCluster(t, 3, func(cfg *Config) { cfg.SnapshotThreshold = 64; cfg.TrailingLogs = 16 })
	acked := putKeys(t, c, "k", 150) // past a snapshot or two: Recover replays the log on top of one
	c.WaitConverged(10 * time.Second)
	c.Stop(1)
	c.Stop(2)
	// Without a quorum nothing is written.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	if _, err := c.Store(0).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("lost"), Value: []byte("x")})); err == nil {
		t.Fatal("a write succeeded without a quorum")
	}
	cancel()
	// Refused while the node runs (the data directory's lock).
	if _, err := backup.Recover(c.Cfgs[0].Offline(), Voters(c.Cfgs[0].Peers[:1])); !errors.Is(err, datadir.ErrInUse) {
		t.Fatalf("Recover beside the running node = %v, want datadir.ErrInUse", err)
	}
	c.Stop(0)
	if _, err := backup.Recover(c.Cfgs[0].Offline(), Voters(c.Cfgs[0].Peers[1:2])); err == nil {
		t.Fatal("Recover with voters that leave this node out succeeded")
	}
	if _, err := backup.Recover(c.Cfgs[0].Offline(), nil); err == nil {
		t.Fatal("Recover with no voters succeeded")
	}
	empty := c.Cfgs[0]
	empty.DataDir = t.TempDir()
	if _, err := backup.Recover(empty.Offline(), Voters(c.Cfgs[0].Peers[:1])); err == nil {
		t.Fatal("Recover of an empty data dir succeeded")
	}
	info, err := backup.Recover(c.Cfgs[0].Offline(), Voters(c.Cfgs[0].Peers[:1]))
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	var last uint64
	for _, v := range acked {
		last = max(last, v)
	}
	if info.Applied < last {
		t.Fatalf("recovered state at index %d, below the last acknowledged write %d", info.Applied, last)
	}
	c.Start(0)
	s := c.Store(0)
	deadline := time.Now().Add(10 * time.Second)
	for !s.IsLeader() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !s.IsLeader() {
		t.Fatal("the recovered node did not become leader of its one-node cluster")
	}
	for key, v := range acked {
		e, err := s.KV(ctxT(t, 5*time.Second), []byte(key), false)
		if err != nil || string(e.Value) != "value-"+key || e.Version != v {
			t.Fatalf("after recovery %s = %q v%d, %v; want v%d", key, e.Value, e.Version, err, v)
		}
	}
	if _, err := s.ApplyKV(ctxT(t, 5*time.Second), command.KVSetCommand(command.KVSetRequest{Key: []byte("after"), Value: []byte("x")})); err != nil {
		t.Fatalf("write after recovery: %v", err)
	}
	servers, _ := s.Servers()
	if len(servers) != 1 || servers[0].ID != "n1" {
		t.Fatalf("members after recovery = %+v, want n1 alone", servers)
	}
	// A wiped n2 is added back and catches up.
	os.RemoveAll(c.Cfgs[1].DataDir)
	c.Cfgs[1].Bootstrap = false // a new node waits to be added
	c.Start(1)
	if err := s.AddVoter(ctxT(t, 10*time.Second), "n2", c.Cfgs[1].RaftBind); err != nil {
		t.Fatalf("add n2: %v", err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for c.Store(1).FSM().AppliedIndex() < s.FSM().AppliedIndex() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	e, err := c.Store(1).KV(ctxT(t, 5*time.Second), []byte("k-0"), true)
	if err != nil || string(e.Value) != "value-k-0" {
		t.Fatalf("the re-added n2 has k-0 = %q, %v", e.Value, err)
	}
	c.Stop(2) // stays gone: its files were never touched
}
