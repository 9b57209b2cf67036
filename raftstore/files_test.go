package raftstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/datadir"
	"github.com/idemgate/idemgate/internal/boltcheck"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestDataFilesArePrivate: the data directory, the state machine, the log
// and every snapshot are the node's own (0700 directories, 0600 files),
// whatever the umask; a data directory made wider is tightened at start.
func TestDataFilesArePrivate(t *testing.T) {
	c := StartTestCluster(t, 1, nil)
	s := c.Store(0)
	for i := 0; i < 20; i++ {
		if _, err := s.ApplyKV(context.Background(), command.KVSetCommand(command.KVSetRequest{Key: []byte{byte('a' + i)}, Value: []byte("secret")})); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	dir := c.Cfgs[0].DataDir
	check := func() {
		t.Helper()
		snaps := 0
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			info, _ := d.Info()
			want := fs.FileMode(0o600)
			if d.IsDir() {
				want = 0o700
			}
			if filepath.Base(path) == "state.bin" {
				snaps++
			}
			if info.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v", path, info.Mode().Perm(), want)
			}
			return nil
		})
		if snaps == 0 {
			t.Fatal("no snapshot was written: the test proves nothing about them")
		}
	}
	check()
	c.Stop(0)
	os.Chmod(dir, 0o755)
	c.Start(0)
	c.WaitLeader(5 * time.Second)
	check()
}

// TestOpenFailsCleanly: a port that cannot be bound (an address of another
// machine) is an error from Open, with every file it opened closed again.
func TestOpenFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig("n1", "192.0.2.1:7001", dir, []Peer{{ID: "n1", RaftAddr: "192.0.2.1:7001"}})
	if s, err := Open(cfg); err == nil {
		s.Close()
		t.Skip("this machine has 192.0.2.1 (TEST-NET-1)")
	}
	// The files were closed: a second Open gets as far as the port again.
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("second Open = %v, want the listen error again (not a locked file)", err)
	}
}

// TestHeartbeatsStopBeforeTheStoresClose: once stopped, the transport's
// heartbeat path never reaches raft, and stopping waits for a heartbeat
// already inside it (one that arrived as the node closed wrote the term
// into a closed log store, and raft panicked).
func TestHeartbeatsStopBeforeTheStoresClose(t *testing.T) {
	g := &guardedTransport{NetworkTransport: raft.NewNetworkTransport(plainLayer{addr: &net.TCPAddr{}}, 1, time.Second, io.Discard)}
	defer g.Close()
	inside, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	g.SetHeartbeatHandler(func(raft.RPC) {
		calls.Add(1)
		close(inside)
		<-release
	})
	handler := g.handler
	go handler(raft.RPC{})
	<-inside
	stopped := make(chan struct{})
	go func() { g.stopHeartbeats(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("stopHeartbeats returned while a heartbeat was inside raft")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-stopped
	handler(raft.RPC{})
	if calls.Load() != 1 {
		t.Fatalf("a heartbeat after the stop reached raft (%d calls)", calls.Load())
	}
}

// TestOpenDamagedFiles: a node whose raft.db or fsm.db is damaged (pages
// overwritten, the file truncated) does not start: Open returns one error
// naming the file, what is wrong and what to do, and panics nowhere (bbolt
// used to, at every restart). fsm.db moved aside as the error says is
// rebuilt from the snapshot and the log.
func TestOpenDamagedFiles(t *testing.T) {
	c := StartTestCluster(t, 1, func(c *Config) { c.LogStore = datadir.LogBolt }) // harms raft.db
	s := c.Store(0)
	ctx := context.Background()
	put := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := s.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprintf("k%03d", i)), Value: make([]byte, 300)})); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(0, 200)
	if err := s.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	put(200, 300)
	c.Stop(0)
	cfg := c.Cfgs[0]
	const (
		raftFix = "; remove this node's data dir and re-add the node to the cluster (it gets a full copy from the leader)"
		fsmFix  = "): move it aside and restart; the node rebuilds it from its snapshot and the log"
	)
	tests := []struct {
		name string
		file string
		harm func(string) error
		want []string
	}{
		{"raft.db pages overwritten", "raft.db", boltcheck.OverwritePages, []string{"raft.db is damaged: page ", raftFix}},
		{"raft.db truncated", "raft.db", boltcheck.TruncateHalf, []string{"raft.db is damaged: ", "truncated", raftFix}},
		{"fsm.db pages overwritten", "fsm.db", boltcheck.OverwritePages, []string{"fsm.db is damaged (page ", fsmFix}},
		{"fsm.db truncated", "fsm.db", boltcheck.TruncateHalf, []string{"fsm.db is damaged (", "truncated", fsmFix}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := cfg
			dc.DataDir = t.TempDir()
			if err := os.CopyFS(dc.DataDir, os.DirFS(cfg.DataDir)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dc.DataDir, tt.file)
			if err := tt.harm(path); err != nil {
				t.Fatal(err)
			}
			st, err := Open(dc)
			if err == nil {
				st.Close()
				t.Fatal("Open = nil, want an error")
			}
			for _, want := range append([]string{path}, tt.want...) {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("Open = %q, want it to say %q", err, want)
				}
			}
			if tt.file != "fsm.db" {
				return
			}
			if err := os.Rename(path, path+".damaged"); err != nil {
				t.Fatal(err)
			}
			st, err = Open(dc)
			if err != nil {
				t.Fatalf("Open after moving fsm.db aside = %v", err)
			}
			defer st.Close()
			for i := 0; i < 300; i++ {
				var e command.KVEntry
				var err error
				testsupport.WaitFor(t, fmt.Sprintf("k%03d readable after the rebuild", i), 5*time.Second, func() bool {
					e, err = st.KV(ctx, []byte(fmt.Sprintf("k%03d", i)), false)
					return err == nil
				})
				if len(e.Value) != 300 {
					t.Fatalf("k%03d after the rebuild: %d bytes, want 300", i, len(e.Value))
				}
			}
		})
	}
}

// TestDataDirLock: a second store on a data directory in use is refused at
// once with who holds it (it waited for bbolt's lock and said "timeout");
// once the first closes, the directory opens again.
func TestDataDirLock(t *testing.T) {
	c := StartTestCluster(t, 1, nil)
	cfg := c.Cfgs[0]
	cfg.RaftBind = "127.0.0.1:0"
	// datadir.ErrInUse, not bbolt's "timeout": refused before any file
	// lock was waited for.
	_, err := Open(cfg)
	if !errors.Is(err, datadir.ErrInUse) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("a second Open on the same data dir = %v, want datadir.ErrInUse naming pid %d", err, os.Getpid())
	}
	c.Stop(0)
	s, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open after the first store closed: %v", err)
	}
	s.Close()
}
