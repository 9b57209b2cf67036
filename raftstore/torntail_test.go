package raftstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/datadir"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestWALTornTailRejoins: a follower of a 3-node cluster on the wal log
// store stops, and its last segment is cut at every byte offset of its
// last three appends (a crash in the middle of a write leaves such a torn
// tail). Each time it starts again from the cut files: it must start (no
// checksum panic, no refusal), the leader must send it the entries it lost,
// and its log must then agree with the leader's entry for entry, its state
// with the others'.
func TestWALTornTailRejoins(t *testing.T) {
	c := StartTestCluster(t, 3, func(cfg *Config) {
		cfg.LogStore = datadir.LogWAL
		cfg.SnapshotThreshold = 1 << 20 // the log, not a snapshot, carries the entries back
	})
	ctx := context.Background()
	leader := c.WaitLeader(10 * time.Second)
	for i := 0; i < 30; i++ {
		cmd := command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprintf("k%d", i)), Value: bytes.Repeat([]byte("v"), i*7%50)})
		if _, err := c.Store(leader).ApplyKV(ctx, cmd); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitConverged(10 * time.Second)
	victim := (leader + 1) % 3
	c.Stop(victim)
	dir := c.Cfgs[victim].DataDir
	template := filepath.Join(t.TempDir(), "template")
	if err := os.CopyFS(template, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(template, datadir.WALDir, "*.wal"))
	if len(segs) != 1 {
		t.Fatalf("segments: %v, want one", segs)
	}
	seg, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	ends := walCommitEnds(seg)
	if len(ends) < 5 {
		t.Fatalf("%d appends in the segment, want 30 or so", len(ends))
	}
	// Every offset of the last append; of the two before it every 5th
	// (IDEMGATE_TORN_TAIL_ALL=1: every one, some 250 restarts). With
	// -short, every 7th throughout. datadir's TestWALTornTail cuts the
	// store at every offset of all three, without the cluster.
	from, to, last := ends[len(ends)-4], ends[len(ends)-1], ends[len(ends)-2]
	step := func(cut int64) int64 {
		switch {
		case testing.Short():
			return 7
		case cut >= last || os.Getenv("IDEMGATE_TORN_TAIL_ALL") == "1":
			return 1
		}
		return 5
	}
	cuts := 0
	for cut := from; cut <= to; cut += step(cut) {
		os.RemoveAll(dir)
		if err := os.CopyFS(dir, os.DirFS(template)); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o700)
		if err := os.Truncate(filepath.Join(dir, datadir.WALDir, filepath.Base(segs[0])), cut); err != nil {
			t.Fatal(err)
		}
		c.Start(victim)
		checkLogsAgree(t, c, leader, victim, fmt.Sprintf("cut at byte %d of %d", cut, to))
		c.Stop(victim)
		cuts++
	}
	t.Logf("%d cuts over bytes %d-%d (the last three appends); each time the follower caught up", cuts, from, to)
}

// checkLogsAgree waits until the follower's log reaches the leader's last
// index, then holds them entry for entry, and the states to be equal.
func checkLogsAgree(t *testing.T, c *TestCluster, leader, follower int, what string) {
	t.Helper()
	l, f := c.Store(leader), c.Store(follower)
	want := l.Raft().LastIndex()
	testsupport.WaitFor(t, what+": the follower's log back to the leader's last index", 20*time.Second, func() bool {
		return f.Raft().LastIndex() >= want
	})
	first, err := f.logs.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	for i := first; i <= want; i++ {
		var a, b raft.Log
		if err := l.logs.GetLog(i, &a); err != nil {
			t.Fatalf("%s: leader's entry %d: %v", what, i, err)
		}
		if err := f.logs.GetLog(i, &b); err != nil {
			t.Fatalf("%s: follower's entry %d: %v", what, i, err)
		}
		if a.Index != b.Index || a.Term != b.Term || a.Type != b.Type || !bytes.Equal(a.Data, b.Data) {
			t.Fatalf("%s: entry %d differs: term %d/%d, %d/%d bytes", what, i, a.Term, b.Term, len(a.Data), len(b.Data))
		}
	}
	c.WaitConverged(10 * time.Second)
}

// walCommitEnds is where each append (its commit frame) ends in a
// raft-wal segment: a 32-byte header, then frames of an 8-byte header
// (type, length) padded to 8 bytes; a commit frame is the header alone.
func walCommitEnds(seg []byte) []int64 {
	var ends []int64
	for off := int64(32); off+8 <= int64(len(seg)); {
		switch n := int64(binary.LittleEndian.Uint32(seg[off+4:])); seg[off] {
		case 1, 2: // entry, index
			off += 8 + (n+7)/8*8
		case 3: // commit
			off += 8
			ends = append(ends, off)
		default:
			return ends
		}
	}
	return ends
}
