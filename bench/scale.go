package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/backup"
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/internal/loopback"
)

// The scale scenario: how a group behaves as it grows to millions of keys
// (100-byte values, sequential keys, each with a TTL as every idempotency
// record has). Reaching 10M keys through the network would take hours, so
// the keys are written by a bulk path, through the real state machine
// (fsm.ApplyBatch, the code every replica runs) in large batches; the file
// is backed up and restored into three data directories with `idemgate
// snapshot restore`, the path an operator takes; then three real `idemgate
// serve` processes on loopback are measured end to end: write throughput
// and latency over the Redis protocol, a snapshot taken under that load, a
// follower rebuilt by snapshot install (time and peak RSS), a cold restart
// (page cache dropped when the bench runs as root) and a mass expiry.

// ScaleConfig configures the scale scenario.
type ScaleConfig struct {
	Keys     int           // keys loaded by the bulk path
	Bin      string        // the idemgate binary to run the nodes with
	Dir      string        // work directory (removed afterwards unless Keep)
	Keep     bool          // keep Dir
	Clients  int           // writers in the load phases
	Duration time.Duration // each load phase
	DueKeys  int           // keys due at once in the expiry phase (0: min(Keys, 1M))
	Network  bool          // load the keys over the Redis protocol instead of the bulk path
	// Etcd, when set, is an etcd binary: the same keys (at most
	// EtcdMaxKeys) are loaded into a 3-member etcd, each on a lease, and
	// its files measured beside idemgate's (EtcdSize).
	Etcd     string
	Progress io.Writer
}

// ScalePhase is one load phase's figures.
type ScalePhase struct {
	Name       string  `json:"name"`
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	PerSecond  float64 `json:"per_second"`
	P50Millis  float64 `json:"p50_ms"`
	P99Millis  float64 `json:"p99_ms"`
	MaxMillis  float64 `json:"max_ms"`
	WindowSecs float64 `json:"window_seconds,omitempty"` // the part measured (snapshot, expiry)
}

// ScaleResult is what the scale scenario measured.
type ScaleResult struct {
	Keys               int             `json:"keys"`
	Network            bool            `json:"network"` // loaded over the network, not by the bulk path
	NetworkLoadSeconds float64         `json:"network_load_seconds,omitempty"`
	BulkSeconds        float64         `json:"bulk_seconds"`
	BulkFileBytes      int64           `json:"bulk_fsm_db_bytes"` // the bulk-loaded file
	LiveBytes          int64           `json:"live_bytes"`        // keys and values of every pair in it
	BackupBytes        int64           `json:"backup_bytes"`
	BackupSeconds      float64         `json:"backup_seconds"`
	RestoreSeconds     float64         `json:"restore_seconds"` // one node's `snapshot restore`
	FSMBytes           int64           `json:"fsm_db_bytes"`    // a node's fsm.db after the restore
	StartSeconds       float64         `json:"start_seconds"`   // three processes to ready (warm)
	Baseline           ScalePhase      `json:"writes"`
	DuringSnapshot     ScalePhase      `json:"writes_during_snapshot"`
	SnapshotBytes      int64           `json:"snapshot_bytes"`
	SnapshotSeconds    float64         `json:"snapshot_seconds"`
	LeaderChanges      int             `json:"leader_changes"` // during the load phases
	InstallSeconds     float64         `json:"install_seconds"`
	InstallBySnapshot  bool            `json:"install_by_snapshot"` // false: the leader sent its whole log instead
	InstallRSS         int64           `json:"install_rss_peak_bytes"`
	InstallFSMBytes    int64           `json:"install_fsm_db_bytes"`
	ColdRestart        float64         `json:"cold_restart_seconds"`
	ColdCache          bool            `json:"cold_cache"` // the page cache was dropped
	DueKeys            int             `json:"due_keys"`
	DueLoadPerSec      float64         `json:"due_load_per_second"`
	ExpirySeconds      float64         `json:"expiry_seconds"` // from due to the backlog drained
	BeforeExpiry       ScalePhase      `json:"writes_before_expiry"`
	DuringExpiry       ScalePhase      `json:"writes_during_expiry"`
	Etcd               *EtcdSizeResult `json:"etcd,omitempty"`
	EtcdSkipped        string          `json:"etcd_skipped,omitempty"`
	DataDirBytes       []int64         `json:"data_dir_bytes"` // at rest, blocks allocated (as du counts, as etcd's are)
	FinalFSMBytes      []int64         `json:"final_fsm_db_bytes"`

	// DirtyBytes is the page cache's dirty and under-writeback bytes when
	// the cluster was ready (/proc/meminfo; -1 unknown), flushed in
	// FlushSeconds before the write phases.
	DirtyBytes   int64   `json:"dirty_before_writes_bytes"`
	FlushSeconds float64 `json:"flush_before_writes_seconds"`
}

// Scale runs the scale scenario.
func Scale(cfg ScaleConfig) (res ScaleResult, err error) {
	if cfg.Keys <= 0 {
		return res, errors.New("bench: scale: --keys must be positive")
	}
	if cfg.Clients <= 0 {
		cfg.Clients = 64
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.DueKeys <= 0 {
		cfg.DueKeys = min(cfg.Keys, 1_000_000)
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	var done func()
	if cfg.Dir, done, err = workDir(cfg.Dir, cfg.Keep, "idemgate-scale-"); err != nil {
		return res, err
	}
	defer done()
	res.Keys, res.Network = cfg.Keys, cfg.Network
	say := func(format string, args ...any) { fmt.Fprintf(cfg.Progress, "scale: "+format+"\n", args...) }

	c, err := newScaleCluster(cfg.Dir, cfg.Bin, "")
	if err != nil {
		return res, err
	}
	defer c.stop()
	if !cfg.Network {
		if err := seedBulk(cfg, c, &res, say); err != nil {
			return res, err
		}
	}
	start := time.Now()
	for i := range c.ids {
		if err := c.start(i, false); err != nil {
			return res, err
		}
	}
	for i := range c.ids {
		if err := c.waitReady(i, 5*time.Minute); err != nil {
			return res, err
		}
	}
	res.StartSeconds = time.Since(start).Seconds()
	say("cluster: ready in %.1f s", res.StartSeconds)
	w := newRespLoad(c, cfg.Clients)
	if cfg.Network {
		start = time.Now()
		if err := w.pipelined("key", cfg.Keys, time.Now().Add(24*time.Hour)); err != nil {
			return res, err
		}
		res.NetworkLoadSeconds = time.Since(start).Seconds()
		res.FSMBytes = fileSize(filepath.Join(c.dataDir(c.leader()), "fsm.db"))
		say("network load: %d keys in %.1f s (%.0f/s), the leader's fsm.db %s", cfg.Keys, res.NetworkLoadSeconds,
			float64(cfg.Keys)/res.NetworkLoadSeconds, mb(res.FSMBytes))
	}

	// The load leaves the page cache full of dirty pages: the state
	// machine's files are written without fsync (the bulk file, its
	// backup and every node's restore; or the network load's), GBs at
	// 10M keys against MBs at 10k. Left alone, their writeback falls in
	// the write phases, where every Raft log fsync waits behind it (on
	// ext4 a journal commit first writes the data blocks it orders): the
	// larger the group, the slower its first phases, for a reason that
	// has nothing to do with its size at rest. Flushed first, every size
	// starts its phases from an idle disk.
	res.DirtyBytes = dirtyBytes()
	start = time.Now()
	syscall.Sync()
	res.FlushSeconds = time.Since(start).Seconds()
	say("flush: %s of dirty pages written in %.1f s before the write phases", mb(res.DirtyBytes), res.FlushSeconds)

	terms := c.watchLeader()
	res.Baseline = w.run("writes", cfg.Duration, nil)
	say("writes: %s", res.Baseline)

	// A snapshot under the same load, a quarter into the phase.
	var snap snapshotAnswer
	var window [2]time.Time
	w.run("writes during a snapshot", cfg.Duration, func() {
		time.Sleep(cfg.Duration / 4)
		window[0] = time.Now()
		snap, err = c.snapshot(c.leader())
		window[1] = time.Now()
	})
	if err != nil {
		return res, err
	}
	res.DuringSnapshot = w.window("writes while the leader snapshots", window[0], window[1])
	res.SnapshotBytes, res.SnapshotSeconds = snap.Bytes, snap.Seconds
	say("snapshot on the leader: %s in %.1f s; %s", mb(snap.Bytes), snap.Seconds, res.DuringSnapshot)

	// A follower rebuilt from nothing: the leader sends its snapshot.
	f := (c.leader() + 1) % len(c.ids)
	c.kill(f)
	if err := os.RemoveAll(c.dataDir(f)); err != nil {
		return res, err
	}
	target := c.appliedIndex() // the commit index may end in no-ops and barriers, which nothing applies
	start = time.Now()
	if err := c.start(f, true); err != nil {
		return res, err
	}
	if err := c.waitApplied(f, target, 10*time.Minute); err != nil {
		return res, err
	}
	res.InstallSeconds = time.Since(start).Seconds()
	res.InstallRSS = c.peakRSS(f)
	res.InstallFSMBytes = fileSize(filepath.Join(c.dataDir(f), "fsm.db"))
	// Raft sends the log instead of a snapshot while the leader still
	// holds it from index 1 (raft.trailing_logs entries are kept).
	snaps, _ := os.ReadDir(filepath.Join(c.dataDir(f), "snapshots"))
	res.InstallBySnapshot = len(snaps) > 0
	say("rebuild: %s caught up in %.1f s (snapshot installed: %v), peak RSS %s, fsm.db %s", c.ids[f], res.InstallSeconds, res.InstallBySnapshot, mb(res.InstallRSS), mb(res.InstallFSMBytes))
	if err := c.waitReady(f, time.Minute); err != nil {
		return res, err
	}

	// A cold restart of that follower: stopped cleanly, page cache dropped.
	if err := c.term(f); err != nil {
		return res, err
	}
	syscall.Sync()
	res.ColdCache = os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0) == nil
	start = time.Now()
	if err := c.start(f, false); err != nil {
		return res, err
	}
	if err := c.waitReady(f, 5*time.Minute); err != nil {
		return res, err
	}
	res.ColdRestart = time.Since(start).Seconds()
	say("cold restart: %s ready in %.1f s (page cache dropped: %v)", c.ids[f], res.ColdRestart, res.ColdCache)

	// Expiry: DueKeys keys due at the same millisecond.
	res.DueKeys = cfg.DueKeys
	if err := scaleExpiry(c, w, cfg, &res, say); err != nil {
		return res, err
	}
	res.LeaderChanges = terms()

	c.stop() // the files are measured at rest, and etcd on a quiet machine
	for i := range c.ids {
		du, err := diskUsage(c.dataDir(i))
		if err != nil {
			return res, err
		}
		res.DataDirBytes = append(res.DataDirBytes, du)
		res.FinalFSMBytes = append(res.FinalFSMBytes, fileSize(filepath.Join(c.dataDir(i), "fsm.db")))
	}
	if cfg.Etcd != "" {
		keys := min(cfg.Keys, EtcdMaxKeys)
		e, err := EtcdSize(cfg.Etcd, EtcdSizeConfig{Keys: keys, Lease: true}, cfg.Progress)
		if err != nil {
			return res, err
		}
		res.Etcd = &e
		say("etcd: %s", strings.TrimSpace(e.String()))
	}
	return res, nil
}

// workDir makes dir (a new temporary one named prefix… when empty), and
// returns it with what removes it afterwards (nothing when keep).
func workDir(dir string, keep bool, prefix string) (string, func(), error) {
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", prefix)
	} else {
		err = os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		return "", nil, err
	}
	if keep {
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// EtcdMaxKeys bounds the keys the scale scenario loads into etcd: its JSON
// gateway takes about a minute a million (with leases).
const EtcdMaxKeys = 1_000_000

// seedBulk writes the keys by the bulk path into a file, backs it up, and
// restores the backup into every node's data directory.
func seedBulk(cfg ScaleConfig, c *scaleCluster, res *ScaleResult, say func(string, ...any)) error {
	seed := filepath.Join(cfg.Dir, "bulk", "fsm.db")
	start := time.Now()
	if err := BulkLoad(seed, cfg.Keys, 24*time.Hour); err != nil {
		return err
	}
	res.BulkSeconds = time.Since(start).Seconds()
	res.BulkFileBytes = fileSize(seed)
	var err error
	if res.LiveBytes, err = liveBytes(seed); err != nil {
		return err
	}
	say("bulk: %d keys in %.1f s, fsm.db %s, live pairs %s", cfg.Keys, res.BulkSeconds, mb(res.BulkFileBytes), mb(res.LiveBytes))
	snap := filepath.Join(cfg.Dir, "bulk.snap")
	start = time.Now()
	if res.BackupBytes, err = writeBackup(seed, snap); err != nil {
		return err
	}
	res.BackupSeconds = time.Since(start).Seconds()
	os.RemoveAll(filepath.Dir(seed))
	say("backup: %s in %.1f s", mb(res.BackupBytes), res.BackupSeconds)
	for i := range c.ids {
		start = time.Now()
		if out, err := exec.Command(cfg.Bin, "snapshot", "restore", snap, "--config", c.file, "--node", c.ids[i]).CombinedOutput(); err != nil {
			return fmt.Errorf("bench: scale: restore %s: %v: %s", c.ids[i], err, out)
		}
		if i == 0 {
			res.RestoreSeconds = time.Since(start).Seconds()
			res.FSMBytes = fileSize(filepath.Join(c.dataDir(0), "fsm.db"))
		}
	}
	say("restore: %.1f s a node, fsm.db %s", res.RestoreSeconds, mb(res.FSMBytes))
	return os.Remove(snap)
}

// scaleExpiry loads the keys due at once over the Redis protocol
// (pipelined), measures writes before they are due, then while the
// sweeper expires them, until the leader reports no backlog.
func scaleExpiry(c *scaleCluster, w *respLoad, cfg ScaleConfig, res *ScaleResult, say func(string, ...any)) error {
	// The load rate decides when to make them due: measured on a first
	// slice with a long TTL (they stay: they are part of the data).
	probe := max(min(100_000, cfg.DueKeys/5), 1000) // long enough to see the group commit's steady rate
	start := time.Now()
	if err := w.pipelined("exp-probe", probe, time.Now().Add(24*time.Hour)); err != nil {
		return err
	}
	rate := float64(probe) / time.Since(start).Seconds()
	loadFor := time.Duration(float64(cfg.DueKeys) / rate * float64(time.Second))
	due := time.Now().Add(loadFor*2 + 5*time.Second + cfg.Duration)
	start = time.Now()
	if err := w.pipelined("exp", cfg.DueKeys, due); err != nil {
		return err
	}
	res.DueLoadPerSec = float64(cfg.DueKeys) / time.Since(start).Seconds()
	say("expiry: %d keys due at %s, loaded at %.0f/s", cfg.DueKeys, due.Format("15:04:05.000"), res.DueLoadPerSec)
	if time.Until(due) < cfg.Duration {
		return fmt.Errorf("bench: scale: the due keys loaded too slowly (%.0f/s) to measure before they were due", res.DueLoadPerSec)
	}
	node := c.leader()
	before, err := c.expiredKV(node) // nothing else expires: every other key lives a day
	if err != nil {
		return err
	}
	time.Sleep(time.Until(due) - cfg.Duration)
	res.BeforeExpiry = w.run("writes before the keys are due", cfg.Duration, nil)
	var drained time.Time
	var werr error
	w.run("writes while they expire", 0, func() {
		drained, werr = c.waitExpired(node, before+float64(cfg.DueKeys), 10*time.Minute)
	})
	if werr != nil {
		return werr
	}
	res.ExpirySeconds = drained.Sub(due).Seconds()
	res.DuringExpiry = w.window("writes while they expire", due, drained)
	say("expiry: %d keys expired in %.1f s; before: %s; during: %s", cfg.DueKeys, res.ExpirySeconds, res.BeforeExpiry, res.DuringExpiry)
	return nil
}

// BulkLoad writes keys KV pairs (key-%010d, 100-byte values, each with
// ttl) into a new state machine file at path through fsm.ApplyBatch, 4096
// commands to an entry, as a leader's stamps would be: the bulk path to
// millions of keys. The commands carry no request ids: a proposer's are
// forgotten after minutes, and the network phases write their own.
func BulkLoad(path string, keys int, ttl time.Duration) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := fsm.Open(fsm.Config{Path: path, NoSync: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	value := bytes.Repeat([]byte{'v'}, 100)
	const perEntry = 4096
	cmds := make([][]byte, 0, perEntry)
	var buf []byte
	for i, index := 0, uint64(1); i < keys; index++ {
		cmds, buf = cmds[:0], buf[:0]
		now := time.Now().UnixNano()
		for j := i; j < min(i+perEntry, keys); j++ {
			start := len(buf)
			c := command.KVSetCommand(command.KVSetRequest{Key: fmt.Appendf(nil, "key-%010d", j), Value: value, TTL: ttl})
			c.Stamp = now // what the leader would stamp
			buf = c.Encode(buf)
			cmds = append(cmds, buf[start:len(buf):len(buf)])
		}
		i += len(cmds)
		out := f.ApplyBatch([]*raft.Log{{Index: index, Term: 1, Type: raft.LogCommand, Data: fsm.EncodeBatch(cmds)}})
		if err, ok := out[0].(error); ok {
			f.Close()
			return fmt.Errorf("bench: bulk load: %w", err)
		}
	}
	return f.Close()
}

// writeBackup writes a backup file of the state machine at path, as a
// one-node cluster's at term 1 (the restore gives it its new members).
func writeBackup(path, out string) (int64, error) {
	f, err := fsm.Open(fsm.Config{Path: path, NoSync: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return 0, err
	}
	defer f.Close()
	snap, err := f.Snapshot()
	if err != nil {
		return 0, err
	}
	defer snap.Release()
	b, err := backup.Spool(filepath.Dir(out), snap, backup.Meta{Term: 1, Node: "bulk",
		Servers: []backup.Server{{ID: "bulk", Raft: "127.0.0.1:1", Voter: true}}})
	if err != nil {
		return 0, err
	}
	defer b.Close()
	file, err := os.Create(out)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(file, b)
	return n, errors.Join(err, file.Close())
}

// liveBytes sums the keys and values of every pair in a bbolt file: what a
// snapshot of it must carry at least.
func liveBytes(path string) (int64, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var total int64
	var walk func(b *bolt.Bucket) error
	walk = func(b *bolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			total += int64(len(k) + len(v))
			if v == nil {
				return walk(b.Bucket(k))
			}
			return nil
		})
	}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			total += int64(len(name))
			return walk(b)
		})
	})
	return total, err
}

// scaleCluster is three idemgate processes on loopback.
type scaleCluster struct {
	dir, bin, file string
	ids            []string
	apis, resps    []string
	procs          []*proc // nil while a node is stopped
	http           *http.Client
}

// newScaleCluster writes the cluster file of three nodes, with extra (a
// top-level YAML line, such as a raft: section) appended.
func newScaleCluster(dir, bin, extra string) (*scaleCluster, error) {
	addrs, err := loopback.FreeAddrs(9)
	if err != nil {
		return nil, err
	}
	c := &scaleCluster{dir: dir, bin: bin, file: filepath.Join(dir, "cluster.yaml"),
		procs: make([]*proc, 3), http: &http.Client{Timeout: 15 * time.Minute}}
	var y strings.Builder
	y.WriteString("nodes:\n")
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("n%d", i+1)
		c.ids = append(c.ids, id)
		c.apis = append(c.apis, "http://"+addrs[3*i+1])
		c.resps = append(c.resps, addrs[3*i+2])
		fmt.Fprintf(&y, "  - {id: %s, raft: %q, api: %q, resp: %q}\n", id, addrs[3*i], addrs[3*i+1], addrs[3*i+2])
	}
	fmt.Fprintf(&y, "data_dir: %q\n", filepath.Join(dir, "{id}"))
	y.WriteString(extra)
	return c, os.WriteFile(c.file, []byte(y.String()), 0o600)
}

func (c *scaleCluster) dataDir(i int) string { return filepath.Join(c.dir, c.ids[i]) }

// start runs node i; a node with no data forms the cluster with the others
// (--bootstrap), or with join waits to be added (a wiped follower the
// leader still counts as a member: it gets the leader's snapshot).
func (c *scaleCluster) start(i int, join bool) error {
	args := []string{"serve", "--config", c.file, "--node", c.ids[i], "--log-format", "json", "--bootstrap"}
	if join {
		args[len(args)-1] = "--join"
	}
	p, err := startProc(c.dir, c.ids[i], c.bin, args...)
	if err != nil {
		return fmt.Errorf("bench: scale: %s: %w", c.ids[i], err)
	}
	c.procs[i] = p
	return nil
}

// kill stops node i at once (SIGKILL).
func (c *scaleCluster) kill(i int) {
	if p := c.procs[i]; p != nil {
		p.stop()
		c.procs[i] = nil
	}
}

// term stops node i cleanly (SIGTERM) and waits for it to exit.
func (c *scaleCluster) term(i int) error {
	p := c.procs[i]
	if p == nil {
		return nil
	}
	c.procs[i] = nil
	if err := p.term(time.Minute); err != nil {
		return fmt.Errorf("bench: scale: %s: %w", c.ids[i], err)
	}
	return nil
}

func (c *scaleCluster) stop() {
	for i := range c.procs {
		c.term(i) // kills what does not stop
	}
}

// peakRSS is node i's peak resident set (VmHWM), 0 when unknown.
func (c *scaleCluster) peakRSS(i int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.procs[i].cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func (c *scaleCluster) get(i int, path string) (int, []byte, error) {
	resp, err := c.http.Get(c.apis[i] + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

func (c *scaleCluster) waitReady(i int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if c.procs[i] == nil || c.procs[i].exited() {
			return fmt.Errorf("bench: scale: %s exited (log: %s)", c.ids[i], filepath.Join(c.dir, c.ids[i]+".log"))
		}
		if status, _, err := c.get(i, "/readyz"); err == nil && status == 200 {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("bench: scale: %s not ready within %s (log: %s)", c.ids[i], limit, filepath.Join(c.dir, c.ids[i]+".log"))
}

type clusterView struct {
	Leader  string `json:"leader"`
	Commit  uint64 `json:"commit_index"`
	Applied uint64 `json:"applied_index"`
}

// view is node i's /v1/cluster.
func (c *scaleCluster) view(i int) (clusterView, error) {
	var v clusterView
	status, body, err := c.get(i, "/v1/cluster")
	if err == nil && status != 200 {
		err = fmt.Errorf("GET /v1/cluster: %d %s", status, body)
	}
	if err == nil {
		err = json.Unmarshal(body, &v)
	}
	return v, err
}

// leader is the index of the node the first live node names leader.
func (c *scaleCluster) leader() int {
	for i := range c.ids {
		if c.procs[i] == nil {
			continue
		}
		if v, err := c.view(i); err == nil {
			for j, id := range c.ids {
				if id == v.Leader {
					return j
				}
			}
		}
	}
	return 0
}

// appliedIndex is the leader's state machine's applied index.
func (c *scaleCluster) appliedIndex() uint64 {
	v, _ := c.view(c.leader())
	return v.Applied
}

func (c *scaleCluster) waitApplied(i int, index uint64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if v, err := c.view(i); err == nil && v.Applied >= index {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("bench: scale: %s did not apply index %d within %s", c.ids[i], index, limit)
}

// watchLeader polls the leader until the returned func is called, which
// says how many times it changed.
func (c *scaleCluster) watchLeader() func() int {
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan int, 1)
	go func() {
		n, last := 0, ""
		for ctx.Err() == nil {
			for i := range c.ids {
				if v, err := c.view(i); err == nil && v.Leader != "" {
					if last != "" && v.Leader != last {
						n++
					}
					last = v.Leader
					break
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		changes <- n
	}()
	return func() int { cancel(); return <-changes }
}

type snapshotAnswer struct {
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
}

func (c *scaleCluster) snapshot(i int) (snapshotAnswer, error) {
	var a snapshotAnswer
	resp, err := c.http.Post(c.apis[i]+"/v1/snapshot", "", nil)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return a, fmt.Errorf("bench: scale: POST /v1/snapshot: %d %s", resp.StatusCode, body)
	}
	return a, json.Unmarshal(body, &a)
}

// expiredKV is node i's count of KV keys its state machine expired since
// it started (every replica applies the same expiries).
func (c *scaleCluster) expiredKV(i int) (float64, error) {
	_, body, err := c.get(i, "/metrics")
	if err != nil {
		return 0, err
	}
	v := metricValue(body, `idemgate_expired_total{kind="kv"}`)
	if v < 0 {
		return 0, errors.New("bench: scale: /metrics has no idemgate_expired_total{kind=\"kv\"}")
	}
	return v, nil
}

// waitExpired waits until node i has expired target KV keys in all, and
// says when it saw that first.
func (c *scaleCluster) waitExpired(i int, target float64, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if n, err := c.expiredKV(i); err == nil && n >= target {
			return time.Now(), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("bench: scale: the keys due at once were not expired within %s", limit)
}

// metricValue is the value of a series (a name, with its labels if it
// has any) in a Prometheus text exposition, -1 when absent.
func metricValue(body []byte, series string) float64 {
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			if v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
				return v
			}
		}
	}
	return -1
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

func (p ScalePhase) String() string {
	return fmt.Sprintf("%.0f writes/s, p50 %.2f ms, p99 %.2f ms, max %.1f ms (%d requests, %d errors)",
		p.PerSecond, p.P50Millis, p.P99Millis, p.MaxMillis, p.Requests, p.Errors)
}

// WriteScale prints the scale scenario's figures.
func WriteScale(w io.Writer, r ScaleResult) {
	pct := func(a, b int64) float64 { return float64(a) / float64(max(b, 1)) }
	fmt.Fprintf(w, "scale: %d keys (100-byte values, 24h TTL), 3 nodes on loopback\n", r.Keys)
	if r.Network {
		fmt.Fprintf(w, "  network load         %.1f s (%.0f keys/s, pipelined SETs over the Redis protocol)\n", r.NetworkLoadSeconds, float64(r.Keys)/r.NetworkLoadSeconds)
		fmt.Fprintf(w, "  fsm.db               %s on the leader after the load (%.0f bytes/key)\n", mb(r.FSMBytes), float64(r.FSMBytes)/float64(r.Keys))
	} else {
		fmt.Fprintf(w, "  bulk load            %.1f s (%.0f keys/s through fsm.ApplyBatch)\n", r.BulkSeconds, float64(r.Keys)/r.BulkSeconds)
		fmt.Fprintf(w, "  fsm.db               %s bulk-loaded, %s restored (%.0f bytes/key); live pairs %s\n", mb(r.BulkFileBytes), mb(r.FSMBytes), float64(r.FSMBytes)/float64(r.Keys), mb(r.LiveBytes))
		fmt.Fprintf(w, "  backup               %s in %.1f s (%.2f× live pairs); restore %.1f s a node\n", mb(r.BackupBytes), r.BackupSeconds, pct(r.BackupBytes, r.LiveBytes), r.RestoreSeconds)
	}
	fmt.Fprintf(w, "  start (warm)         %.1f s to ready\n", r.StartSeconds)
	fmt.Fprintf(w, "  flush                %s of dirty pages in %.1f s, before the write phases\n", mb(r.DirtyBytes), r.FlushSeconds)
	fmt.Fprintf(w, "  writes               %s\n", r.Baseline)
	fmt.Fprintf(w, "  snapshot (leader)    %s in %.1f s; writes meanwhile: %s; p99 %.2f× baseline\n",
		mb(r.SnapshotBytes), r.SnapshotSeconds, r.DuringSnapshot, r.DuringSnapshot.P99Millis/max(r.Baseline.P99Millis, 1e-9))
	fmt.Fprintf(w, "  leader changes       %d\n", r.LeaderChanges)
	how := "by snapshot install"
	if !r.InstallBySnapshot {
		how = "by log replay: the leader still held its whole log"
	}
	fmt.Fprintf(w, "  follower rebuilt     %.1f s %s, peak RSS %s (%.2f× its fsm.db of %s)\n", r.InstallSeconds, how, mb(r.InstallRSS), pct(r.InstallRSS, r.InstallFSMBytes), mb(r.InstallFSMBytes))
	cache := "page cache dropped"
	if !r.ColdCache {
		cache = "page cache NOT dropped (not root)"
	}
	fmt.Fprintf(w, "  cold restart         %.1f s to readyz (%s)\n", r.ColdRestart, cache)
	fmt.Fprintf(w, "  expiry               %d keys due at once (loaded at %.0f/s) expired in %.1f s (%.0f/s)\n", r.DueKeys, r.DueLoadPerSec, r.ExpirySeconds, float64(r.DueKeys)/max(r.ExpirySeconds, 1e-9))
	fmt.Fprintf(w, "    before             %s\n", r.BeforeExpiry)
	fmt.Fprintf(w, "    during             %s; p99 %.2f× before\n", r.DuringExpiry, r.DuringExpiry.P99Millis/max(r.BeforeExpiry.P99Millis, 1e-9))
	if e := r.Etcd; e != nil && len(e.Loaded) > 0 {
		db := e.Loaded[0].DBBytes
		perKey := float64(db) / float64(e.Keys)
		fmt.Fprintf(w, "  etcd (baseline)      %d keys on leases: db %s (%.0f bytes/key), data dir %s; idemgate's fsm.db is %.2f× etcd's db per key\n",
			e.Keys, mb(db), perKey, mb(e.Loaded[0].DirBytes), float64(r.FSMBytes)/float64(r.Keys)/perKey)
	} else if r.EtcdSkipped != "" {
		fmt.Fprintf(w, "  etcd (baseline)      skipped: %s\n", r.EtcdSkipped)
	}
	for i := range r.DataDirBytes {
		fmt.Fprintf(w, "  n%d                   data dir %s, fsm.db %s\n", i+1, mb(r.DataDirBytes[i]), mb(r.FinalFSMBytes[i]))
	}
}

// dirtyBytes is what the page cache holds dirty or under writeback
// (/proc/meminfo's Dirty and Writeback), or -1 when it cannot be read.
func dirtyBytes() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return -1
	}
	return parseDirty(string(b))
}

// parseDirty sums the Dirty and Writeback lines of a /proc/meminfo text:
// -1 when neither is there or one does not read as kB.
func parseDirty(meminfo string) int64 {
	var total int64 = -1
	for _, line := range strings.Split(meminfo, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || (f[0] != "Dirty:" && f[0] != "Writeback:") {
			continue
		}
		if len(f) != 3 || f[2] != "kB" {
			return -1
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || kb < 0 || kb > 1<<40 {
			return -1
		}
		total = max(total, 0) + kb<<10
	}
	return total
}
