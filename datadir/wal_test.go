package datadir

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/internal/boltcheck"
)

// walEntry is entry i of the tests' logs: sizes vary, so frames end at
// every alignment.
func walEntry(i uint64) *raft.Log {
	return &raft.Log{Index: i, Term: 1 + i/5, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(i)}, int(1+i*37%211))}
}

// writeWAL appends entries 1..n to a new raft-wal log in dir, batch at a
// time (one commit frame per batch), and closes it.
func writeWAL(t *testing.T, dir string, n, batch uint64) {
	t.Helper()
	w, err := OpenWAL(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= n; i += batch {
		var logs []*raft.Log
		for j := i; j < i+batch && j <= n; j++ {
			logs = append(logs, walEntry(j))
		}
		if err := w.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// commitEnds parses a raft-wal segment (its format: a 32-byte header, then
// frames of an 8-byte header, type and length, padded to 8 bytes; a
// commit frame is the header alone) and returns where each commit frame
// ends, and the index of the last entry before it.
func commitEnds(t *testing.T, seg []byte) (ends []int64, lastIndex []uint64) {
	t.Helper()
	off, entries := int64(32), uint64(0)
	for off+8 <= int64(len(seg)) {
		typ, n := seg[off], int64(binary.LittleEndian.Uint32(seg[off+4:]))
		switch typ {
		case 1: // entry
			entries++
			off += 8 + (n+7)/8*8
		case 3: // commit
			off += 8
			ends, lastIndex = append(ends, off), append(lastIndex, entries)
		default:
			return ends, lastIndex
		}
	}
	return ends, lastIndex
}

// segmentFile is the one segment file in dir.
func segmentFile(t *testing.T, dir string) string {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "*.wal"))
	if len(segs) != 1 {
		t.Fatalf("segments in %s: %v, want one", dir, segs)
	}
	return segs[0]
}

// TestWALTornTail cuts the log's last segment at every byte offset of its
// last three batches, as a crash during a write leaves it: the file
// truncated there, or (the segment is preallocated) zeros from there on.
// The log must open, never panic, hold exactly the batches whose commit
// frame is whole (an append returns only once its commit frame is synced,
// so those are all that were acknowledged), each entry as written, and
// take the next append after them.
func TestWALTornTail(t *testing.T) {
	src := t.TempDir()
	writeWAL(t, src, 24, 3)
	segPath := segmentFile(t, src)
	seg, err := os.ReadFile(segPath)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := os.ReadFile(filepath.Join(src, "wal-meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	ends, lasts := commitEnds(t, seg)
	if len(ends) != 8 || lasts[7] != 24 {
		t.Fatalf("parsed %d commits (last entries %v), want 8 ending at entry 24", len(ends), lasts)
	}
	from, to := ends[len(ends)-4], ends[len(ends)-1]
	cases := 0
	for cut := from; cut <= to; cut++ {
		for _, zeros := range []bool{false, true} {
			name := fmt.Sprintf("cut at %d (zeros after: %v)", cut, zeros)
			dir := filepath.Join(t.TempDir(), "wal")
			os.MkdirAll(dir, 0o700)
			os.WriteFile(filepath.Join(dir, "wal-meta.db"), meta, 0o600)
			data := seg[:cut]
			if zeros {
				data = append(append([]byte(nil), seg[:cut]...), make([]byte, to+4096-cut)...)
			}
			os.WriteFile(filepath.Join(dir, filepath.Base(segPath)), data, 0o600)
			want := uint64(0)
			for i, e := range ends {
				if e <= cut {
					want = lasts[i]
				}
			}
			checkTornTail(t, name, dir, want)
			cases++
		}
	}
	t.Logf("%d cuts over bytes %d-%d of the segment (the last three batches)", cases, from, to)
}

func checkTornTail(t *testing.T, name, dir string, want uint64) {
	t.Helper()
	// Without fsyncs (what is read back is the same): 2,500 cuts.
	w, err := OpenWAL(dir, true)
	if err != nil {
		t.Fatalf("%s: open: %v", name, err)
	}
	defer func() {
		if w != nil {
			w.Close()
		}
	}()
	last, err := w.LastIndex()
	if err != nil || last != want {
		t.Fatalf("%s: last index %d, %v; want %d (the whole batches before the cut)", name, last, err, want)
	}
	for i := uint64(1); i <= last; i++ {
		var l raft.Log
		if err := w.GetLog(i, &l); err != nil {
			t.Fatalf("%s: entry %d: %v", name, i, err)
		}
		if e := walEntry(i); l.Index != e.Index || l.Term != e.Term || !bytes.Equal(l.Data, e.Data) {
			t.Fatalf("%s: entry %d differs from what was written", name, i)
		}
	}
	if v, err := w.GetUint64([]byte("CurrentTerm")); err != nil || v != 7 {
		t.Fatalf("%s: CurrentTerm %d, %v; want 7", name, v, err)
	}
	// The leader sends the lost entries again: they append after the cut.
	if err := w.StoreLogs([]*raft.Log{walEntry(last + 1)}); err != nil {
		t.Fatalf("%s: append after the cut: %v", name, err)
	}
	w.Close()
	w = nil
	w2, err := OpenWAL(dir, true)
	if err != nil {
		t.Fatalf("%s: reopen after the append: %v", name, err)
	}
	defer w2.Close()
	var l raft.Log
	if err := w2.GetLog(last+1, &l); err != nil || !bytes.Equal(l.Data, walEntry(last+1).Data) {
		t.Fatalf("%s: entry %d appended after the cut reads back as %d bytes, %v", name, last+1, len(l.Data), err)
	}
}

// TestOpenLogRefusesTheOtherStore: a node whose setting names the other
// store than its files, or whose directory holds both, does not start an
// empty log: it is refused with one line naming the setting and the
// migration.
func TestOpenLogRefusesTheOtherStore(t *testing.T) {
	for _, tc := range []struct {
		have, open string
		want       []string
	}{
		{LogBolt, LogWAL, []string{`raft.log_store is "wal"`, "raft.db holds this node's Raft log", "idemgate log migrate --to wal", "raft.log_store: boltdb"}},
		{LogWAL, LogBolt, []string{`raft.log_store is "boltdb"`, "raft-wal holds this node's Raft log", "idemgate log migrate --to boltdb", "raft.log_store: wal"}},
		{"both", LogWAL, []string{"holds both raft.db and raft-wal/", "idemgate log migrate --to KIND"}},
		{"both", LogBolt, []string{"holds both raft.db and raft-wal/", "idemgate log migrate --to KIND"}},
	} {
		dir := t.TempDir()
		for _, kind := range LogStores {
			if tc.have == kind || tc.have == "both" {
				var logs LogStore
				var err error
				if kind == LogWAL {
					logs, err = OpenWAL(LogPath(dir, kind), false)
				} else {
					logs, err = OpenLogStore(LogPath(dir, kind), false)
				}
				if err != nil {
					t.Fatal(err)
				}
				logs.StoreLogs([]*raft.Log{walEntry(1)})
				logs.Close()
			}
		}
		logs, err := OpenLog(dir, tc.open, false)
		if err == nil {
			logs.Close()
			t.Errorf("have %s, open %s: opened, want refused", tc.have, tc.open)
			continue
		}
		msg := err.Error()
		if !errors.Is(err, ErrLogStoreMismatch) || strings.Contains(msg, "\n") {
			t.Errorf("have %s, open %s: %v: want one line, ErrLogStoreMismatch", tc.have, tc.open, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("have %s, open %s: %q lacks %q", tc.have, tc.open, msg, w)
			}
		}
	}
	if _, err := OpenLog(t.TempDir(), "leveldb", false); err == nil || !strings.Contains(err.Error(), `"leveldb"`) {
		t.Errorf("OpenLog(leveldb) = %v, want an error naming it", err)
	}
}

// TestWALReopensInProcess: the log closed and opened again by the same
// process (a node restarted in tests, an offline operation after a
// check). raft-wal v0.4.0 left its meta file open at Close: the second
// open was refused by the check (bbolt alone waited for ever on its
// lock); v0.4.1 closes it.
func TestWALReopensInProcess(t *testing.T) {
	dir := t.TempDir()
	writeWAL(t, dir, 3, 1)
	done := make(chan error, 1)
	go func() {
		w, err := OpenWAL(dir, false)
		if err == nil {
			err = w.Close()
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "wal-meta.db")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("wal-meta.db: %v, %v; want mode 0600", st, err)
	}
	if st, err := os.Stat(segmentFile(t, dir)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("segment: %v, %v; want mode 0600", st, err)
	}
}

// TestWALReopensAfterTailTruncation: a follower whose uncommitted suffix a
// new leader overwrites deletes it (DeleteRange of the tail), then
// restarts. raft-wal v0.4.0 sealed the segment without its index block,
// and the restarted node could read none of it: "sealed segment has no
// index block", a panic in raft.NewRaft at every start (found by the T2
// chaos run on the wal store; raft-wal v0.4.1 fixed it, its issue #31).
func TestWALReopensAfterTailTruncation(t *testing.T) {
	dir := t.TempDir()
	writeWAL(t, dir, 10, 2)
	w, err := OpenWAL(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.DeleteRange(9, 10); err != nil {
		t.Fatal(err)
	}
	if err := w.StoreLogs([]*raft.Log{walEntry(9)}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, err = OpenWAL(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if last, err := w.LastIndex(); last != 9 || err != nil {
		t.Fatalf("last index %d, %v; want 9", last, err)
	}
	for i := uint64(1); i <= 9; i++ {
		var l raft.Log
		if err := w.GetLog(i, &l); err != nil || !bytes.Equal(l.Data, walEntry(i).Data) {
			t.Fatalf("entry %d after the truncation and a restart: %v", i, err)
		}
	}
}

// TestWALDamagedMetaFile: raft-wal's meta file is bbolt, which crashes the
// process on a damaged file; it is checked first, and the node refuses
// with one line naming the file and the fix.
func TestWALDamagedMetaFile(t *testing.T) {
	dir := t.TempDir()
	writeWAL(t, dir, 3, 1)
	meta := filepath.Join(dir, "wal-meta.db")
	if err := boltcheck.TruncateHalf(meta); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWAL(dir, false)
	if err == nil {
		w.Close()
		t.Fatal("opened a truncated wal-meta.db")
	}
	if msg := err.Error(); !strings.HasPrefix(msg, meta+" is damaged: ") || !strings.Contains(msg, "re-add the node") || strings.Contains(msg, "\n") {
		t.Errorf("OpenWAL = %q, want one line naming %s and the fix", msg, meta)
	}
}

// TestOpenLogUnsetKeepsTheStoreOnDisk: with raft.log_store left out, a
// node keeps the log its data directory holds (a node upgraded from a
// build that knew only raft.db starts on it, entries and all), and a new
// node takes DefaultLogStore.
func TestOpenLogUnsetKeepsTheStoreOnDisk(t *testing.T) {
	for _, have := range []string{"", LogBolt, LogWAL} {
		dir := t.TempDir()
		if have != "" {
			logs, err := OpenLog(dir, have, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := logs.StoreLogs([]*raft.Log{walEntry(1)}); err != nil {
				t.Fatal(err)
			}
			logs.Close()
		}
		logs, err := OpenLog(dir, "", false)
		if err != nil {
			t.Fatalf("have %q, open unset: %v", have, err)
		}
		last, err := logs.LastIndex()
		logs.Close()
		want := uint64(1)
		if have == "" {
			want = 0
		}
		if err != nil || last != want {
			t.Errorf("have %q, open unset: last index %d, %v; want %d", have, last, err, want)
		}
		got, err := FindLog(dir)
		if wantKind := cmp.Or(have, DefaultLogStore); err != nil || got != wantKind {
			t.Errorf("have %q, open unset: the directory holds %q, %v; want %q", have, got, err, wantKind)
		}
	}
}
