package raftstore

import (
	"context"
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

	"github.com/idemgate/idemgate/fsm"
)

// TestDataFilesArePrivate: the data directory, the state machine, the log
// and every snapshot are the node's own (0700 directories, 0600 files),
// whatever the umask; a data directory made wider is tightened at start.
func TestDataFilesArePrivate(t *testing.T) {
	c := StartTestCluster(t, 1, nil)
	s := c.Store(0)
	for i := 0; i < 20; i++ {
		if _, err := s.KVSet(context.Background(), []byte{byte('a' + i)}, []byte("secret"), 0, fsm.SetPlain, 0); err != nil {
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
	cfg := TestConfig("n1", "192.0.2.1:7001", dir, []Peer{{ID: "n1", RaftAddr: "192.0.2.1:7001"}})
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
