package resp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testcluster"
	"github.com/idemgate/idemgate/raftstore"
)

// TestKeyspacesAcrossNodes: on a 3-node cluster, writes in several
// keyspaces, a FLUSHDB and a FLUSHALL leave every node with the same state
// (state hash); a follower stopped meanwhile, whose log the leader
// compacted past (a snapshot, few trailing entries), catches up by
// installing the snapshot, and after its restart answers every keyspace's
// DBSIZE, keys, values and a whole SCAN exactly as the leader does.
func TestKeyspacesAcrossNodes(t *testing.T) {
	// boltdb: raft-wal still serves entries its head truncation dropped
	// while they sit in its open segment, so a leader on it sends this
	// short log instead of the snapshot this test is about.
	rc := testcluster.Start(t, 3, func(c *raftstore.Config) { c.TrailingLogs = 4; c.LogStore = "boltdb" })
	leader := rc.WaitLeader(5 * time.Second)
	follower := (leader + 1) % 3
	lc := dialRaw(t, startServer(t, rc.Stores[leader], rc.Cfgs[leader].NodeID, nil).Addr())
	do := func(c *rawConn, cmds ...[]string) []string {
		t.Helper()
		var b strings.Builder
		for _, cmd := range cmds {
			b.WriteString(array(cmd...))
		}
		c.send(b.String())
		return c.replies(len(cmds))
	}
	fill := func(db int, tag string, n int) {
		t.Helper()
		args := []string{"MSET"}
		for i := 0; i < n; i++ {
			args = append(args, fmt.Sprintf("%s:%d", tag, i), fmt.Sprintf("%s@%d", tag, db))
		}
		if r := do(lc, []string{"SELECT", fmt.Sprint(db)}, args, []string{"SET", tag + ":ttl", "x", "EX", "1000"}); r[1] != "+OK\r\n" {
			t.Fatalf("fill %d: %q", db, r)
		}
	}
	for db := 0; db < 4; db++ {
		fill(db, fmt.Sprintf("a%d", db), 50)
	}
	do(lc, []string{"SELECT", "2"}, []string{"FLUSHDB"})
	rc.WaitConverged(10 * time.Second)

	rc.Stop(follower)
	for db := 3; db < 7; db++ {
		fill(db, fmt.Sprintf("b%d", db), 30)
	}
	do(lc, []string{"SELECT", "4"}, []string{"FLUSHDB"}, []string{"SET", "after", "flush"})
	for i := 0; i < 20; i++ { // past the trailing entries: the follower needs the snapshot
		do(lc, []string{"SELECT", "9"}, []string{"INCR", "n"})
	}
	for i, s := range rc.Running() { // whichever leads now (the leader may have changed) compacted its log
		if s != nil && i != follower {
			if err := s.Raft().Snapshot().Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	do(lc, []string{"SET", "last", "1"})
	rc.Start(follower)
	rc.WaitConverged(20 * time.Second)
	if idx := rc.Stores[follower].Raft().Stats()["last_snapshot_index"]; idx == "0" {
		t.Fatal("the follower caught up without installing a snapshot")
	}
	fc := dialRaw(t, startServer(t, rc.Stores[follower], rc.Cfgs[follower].NodeID, nil).Addr())
	do(fc, []string{"READONLY"})
	for db := 0; db < 16; db++ {
		cmds := [][]string{{"SELECT", fmt.Sprint(db)}, {"DBSIZE"}, {"KEYS", "*"}, {"GET", fmt.Sprintf("a%d:7", db)}, {"GET", fmt.Sprintf("b%d:7", db)},
			{"GET", "after"}, {"GET", "n"}, {"SCAN", "0", "COUNT", "1000"}, {"SCAN", "0", "COUNT", "3"}, {"SCAN", "12345678901234567890", "COUNT", "5"}}
		want, got := do(lc, cmds...), do(fc, cmds...)
		for i := range cmds {
			switch cmds[i][0] {
			case "KEYS":
				want[i], got[i] = sortedArray(t, want[i]), sortedArray(t, got[i])
			case "SCAN":
				want[i], got[i] = sortedScan(t, want[i]), sortedScan(t, got[i])
			}
			if got[i] != want[i] {
				t.Errorf("db %d %q: follower %q, leader %q", db, cmds[i], got[i], want[i])
			}
		}
	}
	if r := do(lc, []string{"SELECT", "4"}, []string{"DBSIZE"}, []string{"SELECT", "2"}, []string{"DBSIZE"}, []string{"SELECT", "3"}, []string{"DBSIZE"}); r[1] != ":1\r\n" || r[3] != ":0\r\n" || r[5] != ":82\r\n" {
		t.Fatalf("DBSIZE of keyspaces 4, 2, 3: %q", r)
	}
	do(lc, []string{"FLUSHALL"})
	rc.WaitConverged(10 * time.Second)
	if r := do(fc, []string{"DBSIZE"}, []string{"SELECT", "9"}, []string{"DBSIZE"}); r[0] != ":0\r\n" || r[2] != ":0\r\n" {
		t.Fatalf("after FLUSHALL the follower answers %q", r)
	}
}

// sortedScan is a SCAN reply's cursor, then its keys sorted.
func sortedScan(t *testing.T, r string) string {
	t.Helper()
	cut := strings.Index(r, "\r\n*") // after the cursor's bulk string
	if !strings.HasPrefix(r, "*2\r\n$") || cut < 0 {
		t.Fatalf("not a SCAN reply: %q", r)
	}
	return r[4:cut] + " " + sortedArray(t, r[cut+2:])
}
