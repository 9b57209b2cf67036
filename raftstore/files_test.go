package raftstore

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

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
