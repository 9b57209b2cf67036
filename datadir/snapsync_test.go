package datadir

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/raft"
)

// TestSyncingSinkWritesOutAsItGoes: a snapshot written through the
// node's snapshot store is started to disk chunk by chunk while it is
// written (not all at the final fsync), and reads back byte for byte.
func TestSyncingSinkWritesOutAsItGoes(t *testing.T) {
	dir := t.TempDir()
	store, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	snaps := privateSnapshots{SnapshotStore: store, dir: dir}
	_, trans := raft.NewInmemTransport("")
	sink, err := snaps.Create(raft.SnapshotVersionMax, 10, 1, raft.Configuration{}, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 5*syncChunk+12345)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range want {
		want[i] = byte(r.Uint32())
	}
	for p := want; len(p) > 0; {
		n := min(len(p), 64<<10+7) // writes that straddle the chunks
		if _, err := sink.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	ss := sink.(privateSink).SnapshotSink.(*syncingSink)
	if ss.f == nil || ss.synced < 3*syncChunk {
		t.Fatalf("written %d bytes, started to disk up to %d (file open: %v): want the chunks written out as they fill", ss.written, ss.synced, ss.f != nil)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if ss.f != nil {
		t.Fatal("the second descriptor of the state file is still open")
	}
	metas, err := snaps.List()
	if err != nil || len(metas) != 1 {
		t.Fatalf("List = %v, %v", metas, err)
	}
	_, rc, err := snaps.Open(metas[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes (%v), want the %d written", len(got), err, len(want))
	}
}
