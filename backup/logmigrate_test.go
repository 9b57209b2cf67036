package backup

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/datadir"
)

// migrateEntry is entry i of the tests' logs: every field raft stores set.
func migrateEntry(i uint64) *raft.Log {
	l := &raft.Log{Index: i, Term: 1 + i/7, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(i)}, int(i*53%300)),
		AppendedAt: time.Unix(1_800_000_000, int64(i)*1001).UTC()}
	switch i % 10 {
	case 3:
		l.Type, l.Data = raft.LogConfiguration, []byte("conf")
	case 6:
		l.Type, l.Data = raft.LogNoop, nil
	case 8:
		l.Extensions = []byte("ext")
	}
	return l
}

var migrateStable = map[string]uint64{"CurrentTerm": 9, "LastVoteTerm": 8}

// writeLog writes entries first..last and a term and vote into the store
// kind at its place in dir.
func writeLog(t *testing.T, dir, kind string, first, last uint64) {
	t.Helper()
	if err := datadir.Private(dir); err != nil {
		t.Fatal(err)
	}
	writeLogAt(t, datadir.LogPath(dir, kind), kind, first, last)
}

func writeLogAt(t *testing.T, path, kind string, first, last uint64) {
	t.Helper()
	logs, err := openLogAt(path, kind)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	for i := first; i <= last; i++ {
		if err := logs.StoreLogs([]*raft.Log{migrateEntry(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range migrateStable {
		logs.SetUint64([]byte(k), v)
	}
	logs.Set([]byte("LastVoteCand"), []byte("n2"))
}

// checkLog opens dir's log as kind (the node's way) and checks it holds
// exactly first..last, each entry field by field, and the term and vote.
func checkLog(t *testing.T, dir, kind string, first, last uint64) {
	t.Helper()
	logs, err := datadir.OpenLog(dir, kind, false)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	if f, l, err := bounds(logs); f != first || l != last || err != nil {
		t.Fatalf("%s: indexes %d-%d, %v; want %d-%d", kind, f, l, err, first, last)
	}
	for i := first; i <= last; i++ {
		var got raft.Log
		if err := logs.GetLog(i, &got); err != nil {
			t.Fatalf("%s: entry %d: %v", kind, i, err)
		}
		want := migrateEntry(i)
		if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) ||
			!bytes.Equal(got.Extensions, want.Extensions) || !got.AppendedAt.Equal(want.AppendedAt) {
			t.Fatalf("%s: entry %d = %+v, want %+v", kind, i, got, *want)
		}
	}
	for k, v := range migrateStable {
		if got, err := logs.GetUint64([]byte(k)); got != v || err != nil {
			t.Errorf("%s: %s = %d, %v; want %d", kind, k, got, err, v)
		}
	}
	if got, err := logs.Get([]byte("LastVoteCand")); string(got) != "n2" || err != nil {
		t.Errorf("%s: LastVoteCand = %q, %v; want n2", kind, got, err)
	}
}

func onlyLog(t *testing.T, dir, kind string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "raft") && e.Name() != filepath.Base(datadir.LogPath(dir, kind)) {
			t.Errorf("%s left beside %s", e.Name(), kind)
		}
	}
}

// TestMigrateLogRoundTrip: boltdb → wal → boltdb keeps every entry with
// its index, term, type, data, extensions and time, and the term and vote;
// a log compacted below its first entries keeps its first index.
func TestMigrateLogRoundTrip(t *testing.T) {
	for _, first := range []uint64{1, 41} {
		dir := t.TempDir()
		writeLog(t, dir, datadir.LogBolt, first, 300)
		cfg := Config{NodeID: "n1", DataDir: dir}
		for _, to := range []string{datadir.LogWAL, datadir.LogBolt, datadir.LogWAL} {
			info, err := MigrateLog(cfg, to)
			if err != nil {
				t.Fatalf("to %s: %v", to, err)
			}
			if info.To != to || info.From == to || info.First != first || info.Last != 300 || info.Finished {
				t.Errorf("to %s: %+v", to, info)
			}
			checkLog(t, dir, to, first, 300)
			onlyLog(t, dir, to)
		}
		info, err := MigrateLog(cfg, datadir.LogWAL)
		if err != nil || info.From != datadir.LogWAL || info.Last != 300 {
			t.Errorf("already in wal: %+v, %v", info, err)
		}
	}
}

// TestMigrateLogRefusals: a running node (the lock), no log, a bad target.
func TestMigrateLogRefusals(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, datadir.LogBolt, 1, 5)
	unlock, err := datadir.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := MigrateLog(Config{NodeID: "n1", DataDir: dir}, datadir.LogWAL); !errors.Is(err, datadir.ErrInUse) {
		t.Errorf("beside a running node: %v, want ErrInUse", err)
	}
	unlock()
	onlyLog(t, dir, datadir.LogBolt)
	checkLog(t, dir, datadir.LogBolt, 1, 5)

	for _, tc := range []struct {
		dir, to, want string
	}{
		{t.TempDir(), datadir.LogWAL, "holds no Raft log"},
		{filepath.Join(t.TempDir(), "none"), datadir.LogWAL, "no such file"},
		{dir, "leveldb", `to "leveldb": want one of boltdb, wal`},
		{dir, "", `to "": want one of`},
	} {
		if _, err := MigrateLog(Config{NodeID: "n1", DataDir: tc.dir}, tc.to); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("MigrateLog(%s, %q) = %v, want %q", tc.dir, tc.to, err, tc.want)
		}
	}
}

// TestMigrateLogAfterACrash: a migration stopped before its switch leaves
// a copy under a temporary name (the node runs on the old log; a new
// migration starts over), one stopped after it both stores (the node
// refuses to start; the migration run again checks them and finishes).
// Two different logs are never dropped.
func TestMigrateLogAfterACrash(t *testing.T) {
	cfg := Config{NodeID: "n1", DataDir: t.TempDir()}
	writeLog(t, cfg.DataDir, datadir.LogBolt, 1, 50)
	writeLogAt(t, datadir.LogPath(cfg.DataDir, datadir.LogWAL)+".migrating", datadir.LogWAL, 1, 20) // half a copy, as a crash leaves it
	if _, err := MigrateLog(cfg, datadir.LogWAL); err != nil {
		t.Fatal(err)
	}
	checkLog(t, cfg.DataDir, datadir.LogWAL, 1, 50)
	onlyLog(t, cfg.DataDir, datadir.LogWAL)

	// After the switch: both, the same log.
	writeLog(t, cfg.DataDir, datadir.LogBolt, 1, 50)
	if logs, err := datadir.OpenLog(cfg.DataDir, datadir.LogWAL, false); !errors.Is(err, datadir.ErrLogStoreMismatch) {
		if logs != nil {
			logs.Close()
		}
		t.Fatalf("a node on both stores: %v, want ErrLogStoreMismatch", err)
	}
	info, err := MigrateLog(cfg, datadir.LogWAL)
	if err != nil || !info.Finished || info.Last != 50 {
		t.Fatalf("finishing: %+v, %v", info, err)
	}
	checkLog(t, cfg.DataDir, datadir.LogWAL, 1, 50)
	onlyLog(t, cfg.DataDir, datadir.LogWAL)

	// Both, different logs: refused, both kept.
	writeLog(t, cfg.DataDir, datadir.LogBolt, 1, 49)
	if _, err := MigrateLog(cfg, datadir.LogBolt); !errors.Is(err, ErrLogsDiffer) {
		t.Fatalf("two different logs: %v, want ErrLogsDiffer", err)
	}
	for _, kind := range datadir.LogStores {
		if _, err := os.Stat(datadir.LogPath(cfg.DataDir, kind)); err != nil {
			t.Errorf("%s: %v, want it kept", kind, err)
		}
	}
}

// TestMigrateLogGap: a raft-boltdb log with a gap (a follower that
// installed a snapshot far ahead of its log) moves to raft-wal, which
// takes only contiguous logs, from after the gap, when a snapshot covers
// it; a gap no snapshot covers is a damaged log, refused.
func TestMigrateLogGap(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, datadir.LogBolt, 1, 10)
	writeLog(t, dir, datadir.LogBolt, 101, 120)
	cfg := Config{NodeID: "n1", DataDir: dir}
	if _, err := MigrateLog(cfg, datadir.LogWAL); err == nil || !strings.Contains(err.Error(), "gap at index 100") {
		t.Fatalf("a gap without a snapshot: %v", err)
	}
	onlyLog(t, dir, datadir.LogBolt)
	snaps, err := datadir.SnapshotStore(dir, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	_, trans := inmemTransport()
	sink, err := snaps.Create(raft.SnapshotVersionMax, 100, 15, raft.Configuration{}, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	sink.Write([]byte("state"))
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := MigrateLog(cfg, datadir.LogWAL)
	if err != nil || info.First != 101 || info.Last != 120 || info.Dropped != 100 {
		t.Fatalf("a gap under a snapshot: %+v, %v", info, err)
	}
	checkLog(t, dir, datadir.LogWAL, 101, 120)
}
