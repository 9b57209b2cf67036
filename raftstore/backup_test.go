package raftstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/internal/loopback"
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
		res, err := c.Store(i%len(c.Cfgs)).ApplyKV(ctx, fsm.KVSetCommand(fsm.KVSetRequest{Key: []byte(key), Value: []byte("value-" + key)}))
		for err != nil && storeapi.Unavailable(err) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			res, err = c.Store(i%len(c.Cfgs)).ApplyKV(ctx, fsm.KVSetCommand(fsm.KVSetRequest{Key: []byte(key), Value: []byte("value-" + key)}))
		}
		if err != nil {
			t.Fatalf("set %s: %v", key, err)
		}
		out[key] = res.Version
	}
	return out
}

// saveBackup takes a backup through s and writes it to a file.
func saveBackup(t *testing.T, s *Store) (string, BackupMeta) {
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
	return path, b.Meta
}

// restoredCluster restores path into n new data directories, on new ports,
// and starts them as a new cluster.
func restoredCluster(t *testing.T, path string, n int) *TestCluster {
	t.Helper()
	return StartTestCluster(t, n, func(cfg *Config) {
		if _, err := Restore(*cfg, path); err != nil {
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
	vmeta, size, err := VerifyBackup(f)
	f.Close()
	if st, _ := os.Stat(path); err != nil || vmeta.Index != meta.Index || size != st.Size() {
		t.Fatalf("VerifyBackup = %+v, %d bytes, %v; want index %d, %d bytes", vmeta, size, err, meta.Index, st.Size())
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
	if _, err := src.Store(0).KV(ctxT(t, 5*time.Second), []byte("after-0"), false); !errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("the source cluster sees a key written to the restored one: %v", err)
	}
}

// validBackup is a small backup file's bytes.
func validBackup(t *testing.T) []byte {
	t.Helper()
	c := StartTestCluster(t, 1, nil)
	putKeys(t, c, "k", 20)
	path, _ := saveBackup(t, c.Store(0))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBackupHostile: every damaged, truncated or foreign file is refused
// with ErrBadBackup by VerifyBackup and by Restore, and a refused Restore
// leaves no trace: the data directory is not even created.
func TestBackupHostile(t *testing.T) {
	good := validBackup(t)
	metaLen := int(binary.BigEndian.Uint32(good[9:13]))
	firstChunk := backupHeaderLen + metaLen
	with := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	flip := func(at int) []byte { return with(func(b []byte) []byte { b[at] ^= 0x40; return b }) }
	random := make([]byte, 64<<10)
	rand.Read(random)
	type tc struct {
		name string
		file []byte
	}
	tests := []tc{
		{"empty", nil},
		{"random bytes", random},
		{"wrong magic", with(func(b []byte) []byte { copy(b, "IDGSNAP\x01"); return b })},
		{"wrong version", with(func(b []byte) []byte { b[8] = 2; return b })},
		{"metadata length 4 GiB", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[9:], 0xffffffff); return b })},
		{"metadata length 0", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[9:], 0); return b })},
		{"metadata longer than the file", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[9:], MaxBackupMetaBytes); return b })},
		{"chunk length 4 GiB", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[firstChunk:], 0xffffffff); return b })},
		{"chunk length one short", with(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[firstChunk:], binary.BigEndian.Uint32(b[firstChunk:])-1)
			return b
		})},
		{"end mark first", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[firstChunk:], 0); return b })},
		{"a byte after the checksum", append(append([]byte(nil), good...), 0)},
		{"the file twice", append(append([]byte(nil), good...), good...)},
		{"checksum zeroed", with(func(b []byte) []byte { copy(b[len(b)-32:], make([]byte, 32)); return b })},
		{"a snapshot of the state machine alone", good[firstChunk+4 : len(good)-36]},
		{"the metadata names another index", func() []byte {
			// A file whose checksum is right but whose metadata lies.
			br, _ := NewBackupReader(bytes.NewReader(good))
			payload, _ := io.ReadAll(br)
			meta := br.Meta
			meta.Index++
			return encodeBackup(t, meta, payload)
		}()},
	}
	for _, at := range []int{0, 8, 9, 12, 13, firstChunk - 1, firstChunk, firstChunk + 3, firstChunk + 4, firstChunk + 20, len(good) / 2, len(good) - 37, len(good) - 33, len(good) - 1} {
		tests = append(tests, tc{fmt.Sprintf("a flipped byte at %d of %d", at, len(good)), flip(at)})
	}
	for _, cut := range []int{1, 8, 12, 13, firstChunk - 1, firstChunk, firstChunk + 4, firstChunk + 100, len(good) / 2, len(good) - 36, len(good) - 32, len(good) - 1} {
		tests = append(tests, tc{fmt.Sprintf("truncated to %d of %d bytes", cut, len(good)), good[:cut]})
	}
	addrs, err := loopback.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, tt := range tests {
		if _, _, err := VerifyBackup(bytes.NewReader(tt.file)); !errors.Is(err, ErrBadBackup) {
			t.Errorf("%s: VerifyBackup = %v, want ErrBadBackup", tt.name, err)
		}
		path := filepath.Join(dir, fmt.Sprintf("bad-%d.snap", i))
		if err := os.WriteFile(path, tt.file, 0o600); err != nil {
			t.Fatal(err)
		}
		dataDir := filepath.Join(dir, fmt.Sprintf("data-%d", i))
		cfg := testConfig("n1", addrs[0], dataDir, []Peer{{ID: "n1", RaftAddr: addrs[0]}})
		if _, err := Restore(cfg, path); !errors.Is(err, ErrBadBackup) {
			t.Errorf("%s: Restore = %v, want ErrBadBackup", tt.name, err)
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a refused restore left %s behind (%v)", tt.name, dataDir, err)
		}
	}
	// The good file, for contrast, restores.
	path := filepath.Join(dir, "good.snap")
	os.WriteFile(path, good, 0o600)
	cfg := testConfig("n1", addrs[0], filepath.Join(dir, "data-good"), []Peer{{ID: "n1", RaftAddr: addrs[0]}})
	if _, err := Restore(cfg, path); err != nil {
		t.Fatalf("the good file: Restore = %v", err)
	}
}

// encodeBackup writes a backup file by the format's description (backup.go),
// independently of backupWriter: meta as given, payload in chunks.
func encodeBackup(t *testing.T, meta BackupMeta, payload []byte) []byte {
	t.Helper()
	js, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString("\x89IDGBAK\n")
	b.WriteByte(1)
	binary.Write(&b, binary.BigEndian, uint32(len(js)))
	b.Write(js)
	for len(payload) > 0 {
		n := min(len(payload), 1000)
		binary.Write(&b, binary.BigEndian, uint32(n))
		b.Write(payload[:n])
		payload = payload[n:]
	}
	b.Write([]byte{0, 0, 0, 0})
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

// TestRestoreRefusesUsedDirs: a directory holding data, or locked by a
// running node, is refused and left as it was; one holding only a lock
// file is fine.
func TestRestoreRefusesUsedDirs(t *testing.T) {
	good := validBackup(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "good.snap")
	os.WriteFile(path, good, 0o600)
	addrs, err := loopback.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	peers := []Peer{{ID: "n1", RaftAddr: addrs[0]}}

	used := filepath.Join(dir, "used")
	os.MkdirAll(used, 0o700)
	os.WriteFile(filepath.Join(used, "fsm.db"), []byte("old data"), 0o600)
	if _, err := Restore(testConfig("n1", addrs[0], used, peers), path); !errors.Is(err, ErrDataDirNotEmpty) {
		t.Fatalf("restore into a used dir = %v, want ErrDataDirNotEmpty", err)
	}
	if b, _ := os.ReadFile(filepath.Join(used, "fsm.db")); string(b) != "old data" {
		t.Fatalf("the used dir's file changed: %q", b)
	}

	locked := filepath.Join(dir, "locked")
	os.MkdirAll(locked, 0o700)
	unlock, err := lockDir(locked)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(testConfig("n1", addrs[0], locked, peers), path); !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("restore into a locked dir = %v, want ErrDataDirInUse", err)
	}
	unlock()
	if _, err := Restore(testConfig("n1", addrs[0], locked, peers), path); err != nil {
		t.Fatalf("restore into a dir holding only a lock file = %v", err)
	}
	if _, err := Restore(testConfig("n1", addrs[0], filepath.Join(dir, "nopeers"), nil), path); err == nil {
		t.Fatal("restore without voters succeeded")
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
	if _, err := c.Store(0).ApplyKV(ctx, fsm.KVSetCommand(fsm.KVSetRequest{Key: []byte("lost"), Value: []byte("x")})); err == nil {
		t.Fatal("a write succeeded without a quorum")
	}
	cancel()
	// Refused while the node runs (the data directory's lock).
	if _, err := Recover(c.Cfgs[0], c.Cfgs[0].Peers[:1]); !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("Recover beside the running node = %v, want ErrDataDirInUse", err)
	}
	c.Stop(0)
	if _, err := Recover(c.Cfgs[0], c.Cfgs[0].Peers[1:2]); err == nil {
		t.Fatal("Recover with voters that leave this node out succeeded")
	}
	if _, err := Recover(c.Cfgs[0], nil); err == nil {
		t.Fatal("Recover with no voters succeeded")
	}
	empty := c.Cfgs[0]
	empty.DataDir = t.TempDir()
	if _, err := Recover(empty, c.Cfgs[0].Peers[:1]); err == nil {
		t.Fatal("Recover of an empty data dir succeeded")
	}
	info, err := Recover(c.Cfgs[0], c.Cfgs[0].Peers[:1])
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
	if _, err := s.ApplyKV(ctxT(t, 5*time.Second), fsm.KVSetCommand(fsm.KVSetRequest{Key: []byte("after"), Value: []byte("x")})); err != nil {
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

// TestBackupFormatByHand: a file written by the format's description
// (encodeBackup), with chunks of another size than the writer's, reads
// back: the reader follows the description, not the writer's habits.
func TestBackupFormatByHand(t *testing.T) {
	good := validBackup(t)
	br, err := NewBackupReader(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	payload, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	meta, _, err := VerifyBackup(bytes.NewReader(encodeBackup(t, br.Meta, payload)))
	if err != nil || meta.Index != br.Meta.Index {
		t.Fatalf("VerifyBackup of the hand-written file = %+v, %v", meta, err)
	}
}

// FuzzVerifyBackup: no input makes the reader panic, allocate beyond its
// bounds, or accept a file whose checksum does not match.
func FuzzVerifyBackup(f *testing.F) {
	f.Add([]byte("\x89IDGBAK\n\x01\x00\x00\x00\x02{}\x00\x00\x00\x00"))
	f.Add([]byte("\x89IDGBAK\n\x01\xff\xff\xff\xff"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		meta, _, err := VerifyBackup(bytes.NewReader(b))
		if err == nil {
			// Only a file ending in the SHA-256 of the rest verifies.
			if len(b) < 32 || sha256.Sum256(b[:len(b)-32]) != [32]byte(b[len(b)-32:]) {
				t.Fatalf("accepted a file without a matching checksum (%+v)", meta)
			}
		}
	})
}

// TestRestoreAndRecoverKeepTheOwner: restore and recover run as root (as
// sudo runs them) leave every file to the owner of the data directory, so
// the node's service user can start on it.
func TestRestoreAndRecoverKeepTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: restore and recover change owners only when run as root")
	}
	const service = 65534 // nobody: the node's service user
	src := StartTestCluster(t, 1, nil)
	putKeys(t, src, "k", 10)
	path, _ := saveBackup(t, src.Store(0))
	owned := func(dir string) {
		t.Helper()
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if st := info.Sys().(*syscall.Stat_t); st.Uid != service || st.Gid != service {
				t.Errorf("%s is owned by %d:%d, want the service user's %d:%d", p, st.Uid, st.Gid, service, service)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	parent := filepath.Join(t.TempDir(), "var-lib-idemgate")
	if err := os.Mkdir(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(parent, service, service); err != nil {
		t.Fatal(err)
	}
	addrs, err := loopback.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig("n1", addrs[0], filepath.Join(parent, "n1"), []Peer{{ID: "n1", RaftAddr: addrs[0]}})
	if _, err := Restore(cfg, path); err != nil {
		t.Fatal(err)
	}
	owned(cfg.DataDir)
	if _, err := Recover(cfg, cfg.Peers); err != nil {
		t.Fatal(err)
	}
	owned(cfg.DataDir)
}
