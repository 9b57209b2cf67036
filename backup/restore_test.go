package backup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/idemgate/idemgate/datadir"
)

// TestRestoreRefusesUsedDirs: a directory holding data, or locked by a
// running node, is refused and left as it was; one holding only a lock
// file is fine.
func TestRestoreRefusesUsedDirs(t *testing.T) {
	good := validBackup(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "good.snap")
	os.WriteFile(path, good, 0o600)

	used := filepath.Join(dir, "used")
	os.MkdirAll(used, 0o700)
	os.WriteFile(filepath.Join(used, "fsm.db"), []byte("old data"), 0o600)
	if _, err := Restore(Config{NodeID: "n1", DataDir: used}, path, oneVoter); !errors.Is(err, ErrDataDirNotEmpty) {
		t.Fatalf("restore into a used dir = %v, want ErrDataDirNotEmpty", err)
	}
	if b, _ := os.ReadFile(filepath.Join(used, "fsm.db")); string(b) != "old data" {
		t.Fatalf("the used dir's file changed: %q", b)
	}

	locked := filepath.Join(dir, "locked")
	os.MkdirAll(locked, 0o700)
	unlock, err := datadir.Lock(locked)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(Config{NodeID: "n1", DataDir: locked}, path, oneVoter); !errors.Is(err, datadir.ErrInUse) {
		t.Fatalf("restore into a locked dir = %v, want datadir.ErrInUse", err)
	}
	unlock()
	if _, err := Restore(Config{NodeID: "n1", DataDir: locked}, path, oneVoter); err != nil {
		t.Fatalf("restore into a dir holding only a lock file = %v", err)
	}
	if _, err := Restore(Config{NodeID: "n1", DataDir: filepath.Join(dir, "nopeers")}, path, nil); err == nil {
		t.Fatal("restore without voters succeeded")
	}
}

// TestRestoreAndRecoverKeepTheOwner: restore and recover run as root (as
// sudo runs them) leave every file to the owner of the data directory, so
// the node's service user can start on it.
func TestRestoreAndRecoverKeepTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: restore and recover change owners only when run as root")
	}
	const service = 65534 // nobody: the node's service user
	path := filepath.Join(t.TempDir(), "backup.snap")
	if err := os.WriteFile(path, validBackup(t), 0o600); err != nil {
		t.Fatal(err)
	}
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
	cfg := Config{NodeID: "n1", DataDir: filepath.Join(parent, "n1")}
	if _, err := Restore(cfg, path, oneVoter); err != nil {
		t.Fatal(err)
	}
	owned(cfg.DataDir)
	if _, err := Recover(cfg, oneVoter); err != nil {
		t.Fatal(err)
	}
	owned(cfg.DataDir)
}

// TestRestoreAndRecoverRefuseBadConfigs: a config or voter list that names
// no node, no directory or a voter twice is refused with an error naming
// what is wrong, before a file is read or a directory created.
func TestRestoreAndRecoverRefuseBadConfigs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "backup.snap")
	if err := os.WriteFile(path, validBackup(t), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "n1")
	tests := []struct {
		name   string
		cfg    Config
		voters []Voter
		want   string
	}{
		{"no node id", Config{DataDir: dir}, oneVoter, "NodeID is empty"},
		{"no data dir", Config{NodeID: "n1"}, oneVoter, "DataDir is empty"},
		{"no voters", Config{NodeID: "n1", DataDir: dir}, nil, "no voters"},
		{"a voter without an address", Config{NodeID: "n1", DataDir: dir}, []Voter{{ID: "n1"}}, "voters[0]: id and raft address are required"},
		{"a voter without an id", Config{NodeID: "n1", DataDir: dir}, []Voter{{RaftAddr: "127.0.0.1:1"}}, "voters[0]: id and raft address are required"},
		{"a voter twice", Config{NodeID: "n1", DataDir: dir}, []Voter{{ID: "n1", RaftAddr: "127.0.0.1:1"}, {ID: "n1", RaftAddr: "127.0.0.1:2"}}, `voters[1]: duplicate id "n1"`},
	}
	for _, tt := range tests {
		if _, err := Restore(tt.cfg, path, tt.voters); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Restore = %v, want an error naming %q", tt.name, err, tt.want)
		}
		if _, err := Recover(tt.cfg, tt.voters); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Recover = %v, want an error naming %q", tt.name, err, tt.want)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: a refused call created %s (%v)", tt.name, dir, err)
		}
	}
	// Recover keeps the node's own state: voters without it are refused.
	if _, err := Recover(Config{NodeID: "n2", DataDir: dir}, oneVoter); err == nil || !strings.Contains(err.Error(), `must include this node "n2"`) {
		t.Errorf("Recover with voters leaving the node out = %v", err)
	}
}
