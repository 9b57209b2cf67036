package fsm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// BenchmarkFileBytesPerKey measures the state machine's file per key it
// holds: N writes (IDEMGATE_SIZE_KEYS, default 200,000) applied as a
// leader applies them — batches of 256 commands an entry (raftstore's
// group commit), every command with a request id as storeapi.NewRequestID
// makes them (three nodes: a random 8-byte prefix each, then a sequence)
// and a stamp that advances at IDEMGATE_SIZE_RATE commands a second
// (default 20,000), so request-id generations turn over once N is above
// RequestIDRetention's worth of commands (2.4M at the default rate).
//
// Workloads: KV sets of 100-byte values under 14-byte keys, without and
// with a lifetime, in key order and in random order, and in key order with
// request ids of clients' idempotency keys (in no order); gateway records
// (a begin with a body digest for suspect detection, then a complete with
// a 100-byte body). Metrics: the file's size per key (B/key, what a
// snapshot-less node keeps on disk; bbolt grows a file of over 16 MiB
// 16 MiB ahead, so below ~1M keys this figure moves in steps), the pages up
// to the highest one in use per key (used-B/key: the file without the
// room grown ahead), and the pages each bucket holds per key (kv, records,
// ttl, reqids, digests).
//
//	go test -run XXX -bench FileBytesPerKey -benchtime 1x ./fsm
func BenchmarkFileBytesPerKey(b *testing.B) {
	n := envInt("IDEMGATE_SIZE_KEYS", 200000)
	rate := envInt("IDEMGATE_SIZE_RATE", 20000)
	for _, w := range []struct {
		name      string
		ttl       time.Duration
		random    bool
		records   bool
		clientIDs bool
	}{
		{name: "kv/seq"},
		{name: "kv/random", random: true},
		{name: "kv/seq/client-ids", clientIDs: true},
		{name: "kv-ttl/seq", ttl: time.Hour},
		{name: "kv-ttl/random", ttl: time.Hour, random: true},
		{name: "records/seq", ttl: 24 * time.Hour, records: true},
		{name: "records/random", ttl: 24 * time.Hour, random: true, records: true},
	} {
		b.Run(w.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				l := newSizeLoad(b, n, rate, w.random)
				l.clientIDs = w.clientIDs
				if w.records {
					l.records(w.ttl)
				} else {
					l.kvSets(w.ttl)
				}
				l.report()
			}
		})
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// sizeLoad applies one workload to a fresh state machine.
type sizeLoad struct {
	b        *testing.B
	f        *FSM
	path     string
	n        int
	order    []int // the order in which keys 0..n-1 are written
	index    uint64
	clock    int64
	step     int64 // nanoseconds of the leader's clock per command
	prefixes [3][8]byte
	seq      uint64
	// clientIDs: request ids derived from a client's Idempotency-Key
	// (storeapi.RequestIDFor, a SHA-256): in no order.
	clientIDs bool
}

const sizeBatch = 256 // raftstore's default MaxBatchCommands

func newSizeLoad(b *testing.B, n, rate int, random bool) *sizeLoad {
	path := filepath.Join(b.TempDir(), "fsm.db")
	f, err := Open(Config{Path: path, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	rng := rand.New(rand.NewPCG(1, 2))
	l := &sizeLoad{b: b, f: f, path: path, n: n, order: make([]int, n),
		clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(), step: int64(time.Second) / int64(rate)}
	for i := range l.order {
		l.order[i] = i
	}
	if random {
		rng.Shuffle(n, func(i, j int) { l.order[i], l.order[j] = l.order[j], l.order[i] })
	}
	for i := range l.prefixes {
		binary.BigEndian.PutUint64(l.prefixes[i][:], rng.Uint64())
	}
	return l
}

// command stamps c and gives it the next request id of one of three nodes.
func (l *sizeLoad) command(c *command.Command) []byte {
	l.seq++
	copy(c.ReqID[:8], l.prefixes[l.seq%3][:])
	binary.BigEndian.PutUint64(c.ReqID[8:], l.seq)
	if l.clientIDs {
		sum := sha256.Sum256(c.ReqID[:])
		copy(c.ReqID[:], sum[:])
	}
	l.clock += l.step
	c.Stamp = l.clock
	return c.Encode(nil)
}

// apply applies cmds as batch entries and returns their results.
func (l *sizeLoad) apply(cmds [][]byte) []*command.Result {
	var out []*command.Result
	for len(cmds) > 0 {
		k := min(sizeBatch, len(cmds))
		l.index++
		res := l.f.ApplyBatch([]*raft.Log{{Index: l.index, Term: 1, Type: raft.LogCommand, Data: EncodeBatch(cmds[:k])}})
		rs, ok := res[0].(Results)
		if !ok {
			l.b.Fatalf("batch answered %T", res[0])
		}
		out = append(out, rs...)
		cmds = cmds[k:]
	}
	return out
}

func (l *sizeLoad) kvSets(ttl time.Duration) {
	value := bytes.Repeat([]byte{'v'}, 100)
	cmds := make([][]byte, 0, sizeBatch)
	for _, k := range l.order {
		cmds = append(cmds, l.command(&command.Command{Type: command.TypeKVSet, Key: []byte(fmt.Sprintf("key-%010d", k)), Value: value, TTL: ttl}))
		if len(cmds) == sizeBatch {
			l.check(l.apply(cmds), command.CodeCreated)
			cmds = cmds[:0]
		}
	}
	l.check(l.apply(cmds), command.CodeCreated)
}

// records begins a batch of records, then completes them, as a gateway
// does: the complete is proposed once the begin's answer (its fence) came.
func (l *sizeLoad) records(ttl time.Duration) {
	body := bytes.Repeat([]byte{'b'}, 100)
	for i := 0; i < l.n; i += sizeBatch {
		keys := l.order[i:min(i+sizeBatch, l.n)]
		begins := make([][]byte, 0, len(keys))
		for _, k := range keys {
			rk := command.RecordKey("pay", "tenant-0001", fmt.Sprintf("req-%010d", k))
			digest := sha256.Sum256(binary.BigEndian.AppendUint64(nil, uint64(k)))
			begins = append(begins, l.command(&command.Command{Type: command.TypeRecordBegin, Key: rk, Value: digest[:], TTL: ttl,
				Timeout: 30 * time.Second, DigestKey: command.DigestKey("pay", "tenant-0001", digest[:]), Window: 5 * time.Minute}))
		}
		res := l.apply(begins)
		l.check(res, command.CodeCreated)
		completes := make([][]byte, 0, len(keys))
		for j, k := range keys {
			rk := command.RecordKey("pay", "tenant-0001", fmt.Sprintf("req-%010d", k))
			completes = append(completes, l.command(&command.Command{Type: command.TypeRecordComplete, Key: rk, Fence: res[j].Fence, Status: 200,
				Headers: []command.Header{{Name: []byte("Content-Type"), Value: []byte("application/json")}}, Body: body}))
		}
		l.check(l.apply(completes), command.CodeOK)
	}
}

func (l *sizeLoad) check(rs []*command.Result, want command.Code) {
	for _, r := range rs {
		if r.Code != want {
			l.b.Fatalf("a command answered %v (%v), want code %d", r.Code, r.Err(), want)
		}
	}
}

// report reports the file's size and each bucket's pages per key.
func (l *sizeLoad) report() {
	if err := l.f.db.Sync(); err != nil {
		l.b.Fatal(err)
	}
	st, err := os.Stat(l.path)
	if err != nil {
		l.b.Fatal(err)
	}
	per := func(v int) float64 { return float64(v) / float64(l.n) }
	l.b.ReportMetric(per(int(st.Size())), "B/key")
	err = l.f.db.View(func(tx *bolt.Tx) error {
		l.b.ReportMetric(per(int(tx.Size())), "used-B/key")
		for _, name := range []string{"kv", "records", "ttl", "reqids", "digests"} {
			s := tx.Bucket([]byte(name)).Stats()
			if alloc := s.BranchAlloc + s.LeafAlloc; alloc > 0 {
				l.b.ReportMetric(per(alloc), name+"-B/key")
			}
		}
		return nil
	})
	if err != nil {
		l.b.Fatal(err)
	}
}
