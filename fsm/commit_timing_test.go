package fsm

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/idemgate/idemgate/command"
)

// BenchmarkApplyCommitEvery is the cost of one log entry of 16 SETNX of
// fresh keys (a leader's coalesced batch) handed over alone, as Raft hands
// a follower most entries under load, with the transaction committed
// every 1 (each batch, the default), 16 or 256 entries (amortised
// commits, commit.go). Not a timed test: the figures go in the commit.
func BenchmarkApplyCommitEvery(b *testing.B) {
	for _, every := range []int{1, 16, 256} {
		b.Run(fmt.Sprint(every), func(b *testing.B) {
			f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true, CommitEvery: every, CommitInterval: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			stamp := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
			logs := make([]*raft.Log, b.N)
			for i := range logs {
				cmds := make([][]byte, 16)
				for j := range cmds {
					c := command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprint("lock:", i, ":", j)), Value: []byte("owner-token-1234"), TTL: time.Minute, Mode: command.SetNX})
					c.Stamp = stamp
					cmds[j] = c.Encode(nil)
				}
				logs[i] = &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: EncodeBatch(cmds)}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range logs {
				f.ApplyBatch(logs[i : i+1])
			}
		})
	}
}
