package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/datadir"
)

// TestLogMigrateCommand: `idemgate log migrate` on a stopped node's data
// dir, both ways, then again (nothing to do); a bad --to is a bad command
// line (2), a running node (the lock) a failure (1), each one line.
func TestLogMigrateCommand(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "n1")
	cfgPath := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf("nodes:\n  - {id: n1, raft: 127.0.0.1:1, api: 127.0.0.1:2, listen: 127.0.0.1:3}\ndata_dir: %s/{id}\nupstream: http://127.0.0.1:4\nraft: {log_store: boltdb}\n", dir)), 0o600)
	datadir.Private(data)
	logs, err := datadir.OpenLog(data, datadir.LogBolt, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 12; i++ {
		logs.StoreLog(&raft.Log{Index: i, Term: 2, Data: []byte("x")})
	}
	logs.SetUint64([]byte("CurrentTerm"), 2)
	logs.Close()
	node := []string{"--config", cfgPath, "--node", "n1"}

	for _, tc := range []struct {
		to, out string
	}{
		{"wal", "migrated n1's log from boltdb to wal: entries 1-12, term and vote, checked"},
		{"wal", "n1's log is already in wal (entries 1-12): nothing to do; set raft.log_store: wal in "},
		{"boltdb", "migrated n1's log from wal to boltdb: entries 1-12"},
	} {
		code, out, errOut := runArgs(append([]string{"log", "migrate", "--to", tc.to}, node...)...)
		if code != 0 || !strings.HasPrefix(out, tc.out) || errOut != "" {
			t.Errorf("log migrate --to %s = exit %d, %q, %q; want 0 and %q", tc.to, code, out, errOut, tc.out)
		}
	}

	unlock, err := datadir.Lock(data)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--to", "wal"}, 1, "idemgate log migrate: data dir in use: "},
		{[]string{"--to", "leveldb"}, 2, `idemgate log migrate: --to: "leveldb": want boltdb or wal`},
		{nil, 2, `idemgate log migrate: --to: "": want boltdb or wal`},
	} {
		code, out, errOut := runArgs(append(append([]string{"log", "migrate"}, tc.args...), node...)...)
		if code != tc.code || out != "" || !strings.HasPrefix(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("log migrate %v = exit %d, %q, %q; want %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
}
