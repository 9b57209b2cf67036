package fsm

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/idemgate/idemgate/command"
)

// BenchmarkSetNXApply is the cost of applying SETNX, in batches of 64
// commands as the proposer coalesces them: "new" creates a key each time,
// "held" finds the key there (a lock already held: the read of the
// entry, which carries the kind of value since lists, and no write).
// Not a timed test: the figures go in the commit that changes the path.
func BenchmarkSetNXApply(b *testing.B) {
	for _, held := range []bool{false, true} {
		name := map[bool]string{false: "new", true: "held"}[held]
		b.Run(name, func(b *testing.B) {
			f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			stamp := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
			index := uint64(0)
			batch := func(keys func(i int) string) {
				logs := make([]*raft.Log, 64)
				for i := range logs {
					index++
					c := command.KVSetCommand(command.KVSetRequest{Key: []byte(keys(i)), Value: []byte("owner-token-1234"), TTL: time.Minute, Mode: command.SetNX})
					c.Stamp = stamp
					logs[i] = &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: c.Encode(nil)}
				}
				f.ApplyBatch(logs)
			}
			if held {
				batch(func(i int) string { return fmt.Sprint("lock:", i) })
			}
			b.ResetTimer()
			for n := 0; n < b.N; n += 64 {
				if held {
					batch(func(i int) string { return fmt.Sprint("lock:", i) })
				} else {
					batch(func(i int) string { return fmt.Sprint("k:", n, ":", i) })
				}
			}
		})
	}
}
