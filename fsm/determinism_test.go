package fsm

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// randomStream builds a command stream over a small keyspace so commands
// collide: every type, TTLs that expire mid-stream, stale fences, retried
// request ids, expire batches and garbage.
func randomStream(seed uint64, n int) []*raft.Log {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	key := func() []byte { return []byte(fmt.Sprintf("k%d", rng.IntN(8))) }
	var ids []command.ReqID
	logs := make([]*raft.Log, 0, n)
	for i := 1; i <= n; i++ {
		clock += int64(rng.IntN(300)) * int64(time.Millisecond)
		if rng.IntN(20) == 0 {
			clock -= int64(time.Second) // leader change to a lagging clock
		}
		c := command.Command{Stamp: clock, Key: key(), TTL: time.Duration(rng.IntN(3)) * time.Second}
		switch {
		case len(ids) > 0 && rng.IntN(10) == 0:
			c.ReqID = ids[rng.IntN(len(ids))]
		case rng.IntN(2) == 0:
			c.ReqID = command.ReqID{0: byte(i), 1: byte(i >> 8), 2: 1}
			ids = append(ids, c.ReqID)
		}
		switch rng.IntN(29) {
		case 0:
			c.Type = command.TypeRecordBegin
			c.Timeout = time.Duration(rng.IntN(2)) * time.Second
			c.Flags = byte(rng.IntN(4))
			if rng.IntN(2) == 0 {
				c.Body = []byte{byte(rng.IntN(3))} // a digest key shared by several record keys
				c.Version = uint64(rng.IntN(3)) * uint64(time.Second)
			}
		case 1:
			c.Type, c.Fence, c.Status, c.Body = command.TypeRecordComplete, uint64(rng.IntN(i)+1), 200, []byte("body")
		case 2, 3:
			c.Type, c.Fence = command.TypeRecordRelease, uint64(rng.IntN(i))
		case 4:
			c.Type = command.TypeTokenIssue
		case 5:
			c.Type = command.TypeTokenConsume
		case 6, 7:
			c.Type, c.Value, c.Mode, c.Version = command.TypeKVSet, []byte{byte(i)}, command.SetMode(rng.IntN(3)), uint64(rng.IntN(i))
		case 8:
			c.Type = command.TypeKVGetDel
		case 9:
			c.Type = command.TypeKVDelete
		case 11:
			c.Type, c.Value = command.TypeKVIncr, []byte(fmt.Sprint(rng.IntN(7)-3))
			if rng.IntN(8) == 0 {
				c.Value = []byte("9223372036854775807") // overflows once the key is positive
			}
		case 12:
			c.Type, c.Flags = command.TypeKVExpire, byte(rng.IntN(32))
			if c.Flags&command.FlagExpireNow != 0 {
				c.TTL = 0
			}
		case 13:
			c.Type, c.Value, c.Mode, c.Flags = command.TypeKVSet, []byte{byte(i)}, command.SetMode(rng.IntN(4)), byte(rng.IntN(4))
			if c.Flags&command.FlagKeepTTL != 0 {
				c.TTL = 0
			}
		case 14: // a script's effects: stale reads conflict, blind writes apply
			var reads []command.ScriptRead
			for j := rng.IntN(3); j > 0; j-- {
				reads = append(reads, command.ScriptRead{Key: key(), Live: rng.IntN(2) == 0, Version: uint64(rng.IntN(i))})
			}
			writes := [][]byte{command.KVIncrCommand(key(), 1).Encode(nil),
				command.KVSetCommand(command.KVSetRequest{Key: key(), Value: []byte{byte(i)}, TTL: time.Second, Mode: command.SetMode(rng.IntN(2))}).Encode(nil),
				command.KVDeleteCommand(key()).Encode(nil)}[:1+rng.IntN(3)]
			c = command.Command{Type: command.TypeScriptEffects, Stamp: clock, ReqID: c.ReqID,
				Body: encodeEffects(clock-int64(rng.IntN(500))*int64(time.Millisecond), reads, writes)}
		case 15:
			c.Type = command.TypeOnceBegin
			c.Value = command.OnceFingerprint([]byte{byte(rng.IntN(2))}) // a key reused with another payload now and then
			c.Timeout = time.Duration(rng.IntN(3)+1) * 300 * time.Millisecond
			c.TTL += time.Second
		case 16:
			c.Type, c.Fence, c.Timeout = command.TypeOnceRenew, uint64(rng.IntN(i)+1), time.Second
		case 17:
			c.Type, c.Fence, c.Body = command.TypeOnceComplete, uint64(rng.IntN(i)+1), []byte{byte(i)}
			c.TTL += time.Second
		case 18:
			c.Type, c.Fence = command.TypeOnceRelease, uint64(rng.IntN(i)+1)
		case 20: // a lock taken or queued for by one of three owners
			c.Type, c.Value = command.TypeLockAcquire, bytes.Repeat([]byte{byte(rng.IntN(3) + 1)}, command.LockOwnerLen)
			c.Timeout = time.Duration(rng.IntN(3)+1) * 300 * time.Millisecond
		case 21:
			switch rng.IntN(3) {
			case 0:
				c.Type, c.Fence, c.Timeout = command.TypeLockRenew, uint64(rng.IntN(i)+1), time.Second
			case 1:
				c.Type, c.Fence = command.TypeLockRelease, uint64(rng.IntN(i)+1)
			default:
				c.Type, c.Value, c.Version = command.TypeLockLeave, bytes.Repeat([]byte{byte(rng.IntN(3) + 1)}, command.LockOwnerLen), uint64(rng.IntN(i))
			}
			c.TTL = 0
		case 22: // lists on the same keys as strings: WRONGTYPE both ways
			c = *command.ListPushCommand(c.Key, [][]byte{{byte(i)}, {byte(rng.IntN(3))}}, rng.IntN(2) == 0, rng.IntN(4) == 0)
			c.Stamp, c.ReqID = clock, command.ReqID{0: byte(i), 1: byte(i >> 8), 2: 2}
		case 23:
			c = *command.ListPopCommand([][]byte{c.Key, key()}, rng.IntN(2) == 0, int64(rng.IntN(4))-1)
			c.Stamp = clock
		case 24:
			c = *command.ListRemCommand(c.Key, []byte{byte(rng.IntN(3))}, int64(rng.IntN(5))-2)
			c.Stamp = clock
		case 25:
			c = *command.ListTrimCommand(c.Key, int64(rng.IntN(5))-2, int64(rng.IntN(5))-2)
			c.Stamp = clock
		case 26: // a move between two keys, or one key's rotation
			c = *command.ListMoveCommand(c.Key, key(), rng.IntN(2) == 0, rng.IntN(2) == 0)
			c.Stamp = clock
		case 27:
			c = *command.ListSetCommand(c.Key, int64(rng.IntN(5))-2, []byte{byte(i)})
			c.Stamp = clock
		case 28:
			c = *command.ListInsertCommand(c.Key, []byte{byte(rng.IntN(3))}, []byte{byte(i)}, rng.IntN(2) == 0)
			c.Stamp = clock
		case 10:
			c.Type = command.TypeExpire
			c.Key = nil
			for j := 0; j < 3; j++ {
				c.Entries = append(c.Entries, ttl.Entry{Kind: []ttl.Kind{ttl.KindRecord, ttl.KindToken, ttl.KindKV, ttl.KindOnce, ttl.KindLock}[rng.IntN(5)], Key: key(), At: clock - int64(rng.IntN(3))*int64(time.Second)})
			}
		default:
			logs = append(logs, &raft.Log{Index: uint64(i), Type: raft.LogCommand, Data: []byte{1, 2, 3}})
			continue
		}
		logs = append(logs, &raft.Log{Index: uint64(i), Type: raft.LogCommand, Data: c.Encode(nil)})
	}
	return logs
}

// batchStream packs a stream's commands into batch entries of 1 to 8
// commands (what a leader's group commit makes), renumbering the entries.
func batchStream(seed uint64, logs []*raft.Log) []*raft.Log {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []*raft.Log
	for i := 0; i < len(logs); {
		n := min(1+rng.IntN(8), len(logs)-i)
		data := logs[i].Data
		if n > 1 {
			cmds := make([][]byte, n)
			for j := range cmds {
				cmds[j] = logs[i+j].Data
			}
			data = EncodeBatch(cmds)
		}
		out = append(out, &raft.Log{Index: uint64(len(out) + 1), Type: raft.LogCommand, Data: data})
		i += n
	}
	return out
}

func resultsOf(out []interface{}) string {
	var b bytes.Buffer
	for _, r := range out {
		switch r := r.(type) {
		case *command.Result:
			b.Write(r.Encode(nil))
		case Results:
			for _, x := range r {
				b.Write(x.Encode(nil))
				b.WriteByte(',')
			}
		}
		b.WriteByte('|')
	}
	return b.String()
}

func TestDeterminism(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { checkDeterminism(t, randomStream(seed, 2000)) })
	}
}

// TestDeterminismBatched: the same with the commands packed into batch
// entries, as a leader's group commit writes them.
func TestDeterminismBatched(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { checkDeterminism(t, batchStream(seed, randomStream(seed, 2000))) })
	}
}

// checkDeterminism applies logs to two state machines, one in chunks and
// one entry at a time with a snapshot and restore midway: the states and
// every result must be equal.
func checkDeterminism(t *testing.T, logs []*raft.Log) {
	a, b := newHarness(t), newHarness(t)
	var resA, resB []string
	for i := 0; i < len(logs); i += 37 {
		end := min(i+37, len(logs))
		resA = append(resA, resultsOf(a.f.ApplyBatch(logs[i:end])))
	}
	// b: one command at a time, and a snapshot/restore midway.
	mid := len(logs) / 2
	for i, l := range logs {
		if i == mid {
			data := snapshotBytes(t, b.f)
			fresh := newHarness(t)
			if err := fresh.f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
				t.Fatal(err)
			}
			b = fresh
		}
		resB = append(resB, resultsOf([]interface{}{b.f.Apply(l)}))
	}
	ha, err := a.f.stateHash()
	if err != nil {
		t.Fatal(err)
	}
	hb, err := b.f.stateHash()
	if err != nil {
		t.Fatal(err)
	}
	if ha != hb {
		t.Fatalf("state hashes differ: %x vs %x", ha, hb)
	}
	// Whatever the commands did to keys, the scan index still holds
	// exactly the keys there are, each under its creation.
	a.indexMatchesKV()
	b.indexMatchesKV()
	if got, want := resultsOf(nil)+joinAll(resB), joinAll(resA); got != want {
		t.Fatalf("results differ between batched and single applies")
	}
	if a.f.Now() != b.f.Now() || a.f.AppliedIndex() != b.f.AppliedIndex() || a.f.rev.Load() != b.f.rev.Load() {
		t.Fatalf("clock/index/revision differ: %d/%d/%d vs %d/%d/%d", a.f.Now(), a.f.AppliedIndex(), a.f.rev.Load(),
			b.f.Now(), b.f.AppliedIndex(), b.f.rev.Load())
	}
}

func joinAll(parts []string) string {
	var b bytes.Buffer
	for _, p := range parts {
		b.WriteString(p)
	}
	return b.String()
}
