package fsm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

func sampleCommands() []command.Command {
	id := command.ReqID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	return []command.Command{
		{Type: command.TypeNoop, Value: make([]byte, 64)},
		{Type: command.TypeRecordBegin, ReqID: id, Stamp: 42, Key: command.RecordKey("pay", "u1", "k"), Value: make([]byte, 32), TTL: 24 * time.Hour, Timeout: 30 * time.Second, Flags: command.FlagReleaseUnknown},
		{Type: command.TypeRecordComplete, ReqID: id, Key: []byte("k"), Fence: 99, Status: 201, Flags: command.FlagBodyDropped,
			Headers: []command.Header{{Name: []byte("Content-Type"), Value: []byte("application/json")}, {Name: []byte("X"), Value: nil}}, Body: []byte(`{"ok":true}`)},
		{Type: command.TypeRecordRelease, Key: []byte("k")},
		{Type: command.TypeExpire, Entries: []ttl.Entry{{Kind: ttl.KindKV, Key: []byte("a"), At: 123}, {Kind: ttl.KindToken, Key: []byte("b"), At: -1}}},
		{Type: command.TypeTokenIssue, Key: command.TokenKey("s", "t"), TTL: time.Minute},
		{Type: command.TypeTokenConsume, Key: command.TokenKey("s", "t")},
		{Type: command.TypeKVSet, Key: []byte("k"), Value: []byte("v"), Mode: command.SetCAS, Version: 1 << 40, TTL: time.Second},
		{Type: command.TypeKVGetDel, Key: []byte("k")},
		{Type: command.TypeKVDelete, Key: []byte("k")},
	}
}

func TestCommandRoundTrip(t *testing.T) {
	for _, c := range sampleCommands() {
		enc := c.Encode(nil)
		var got command.Command
		if err := command.Decode(enc, &got); err != nil {
			t.Fatalf("Decode(Encode(%s)) error: %v", c.Type, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("Decode(Encode(%s)) = %+v, want %+v", c.Type, got, c)
		}
		if err := command.Stamp(enc, 777); err != nil {
			t.Fatal(err)
		}
		command.Decode(enc, &got)
		if got.Stamp != 777 {
			t.Fatalf("Stamp did not patch %s: %d", c.Type, got.Stamp)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	valid := (&command.Command{Type: command.TypeKVSet, Key: []byte("k")}).Encode(nil)
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"short header", valid[:10]},
		{"wrong version", append([]byte{9}, valid[1:]...)},
		{"unknown type", append([]byte{1, 200}, valid[2:]...)},
		{"type zero", append([]byte{1, 0}, valid[2:]...)},
		{"truncated body", valid[:len(valid)-3]},
		{"trailing bytes", append(append([]byte(nil), valid...), 0)},
		{"empty key", (&command.Command{Type: command.TypeKVGetDel}).Encode(nil)},
		{"huge key", (&command.Command{Type: command.TypeKVGetDel, Key: make([]byte, command.MaxStoredKeyLen+1)}).Encode(nil)},
		{"negative ttl", (&command.Command{Type: command.TypeKVSet, Key: []byte("k"), TTL: -1}).Encode(nil)},
		{"bad status", (&command.Command{Type: command.TypeRecordComplete, Key: []byte("k"), Fence: 1, Status: 42}).Encode(nil)},
		{"complete without fence", (&command.Command{Type: command.TypeRecordComplete, Key: []byte("k"), Status: 200}).Encode(nil)},
		{"bad mode", (&command.Command{Type: command.TypeKVSet, Key: []byte("k"), Mode: 9}).Encode(nil)},
		{"bad expiry kind", (&command.Command{Type: command.TypeExpire, Entries: []ttl.Entry{{Kind: 0}}}).Encode(nil)},
	}
	for _, tt := range tests {
		var c command.Command
		if err := command.Decode(tt.data, &c); !errors.Is(err, command.ErrBadCommand) {
			t.Errorf("Decode(%s) = %v, want ErrBadCommand", tt.name, err)
		}
	}
}

func TestResultRoundTrip(t *testing.T) {
	results := []*command.Result{
		{Code: command.CodeCreated, Fence: 7, ExpiresAt: 99},
		{Code: command.CodeExists, Version: 3, Value: []byte("v")},
		{Code: command.CodeExists, Record: &command.Record{State: command.StateCompleted, Fence: 1, Fingerprint: []byte("fp"), Status: 200,
			Headers: []command.Header{{Name: []byte("A"), Value: []byte("b")}}, Body: []byte("body"), BodyDropped: true}},
		{Code: command.CodeExists, Record: &command.Record{State: command.StateCompleted, Fence: 2, Status: 201, Body: []byte("b"), Sum: 0xdeadbeef, HasSum: true}},
		{Code: command.CodeStorage},
	}
	for _, r := range results {
		got, err := command.DecodeResult(r.Encode(nil))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("DecodeResult(Encode(%+v)) = %+v", r, got)
		}
	}
	if _, err := command.DecodeResult([]byte{200}); err == nil {
		t.Fatal("DecodeResult(bad code) succeeded")
	}
}

// FuzzDecode: garbage never panics, and whatever decodes re-encodes to
// something that decodes to the same command.
func FuzzDecode(f *testing.F) {
	for _, c := range sampleCommands() {
		f.Add(c.Encode(nil))
	}
	f.Add([]byte{1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		var c command.Command
		if err := command.Decode(data, &c); err != nil {
			return
		}
		var again command.Command
		if err := command.Decode(c.Encode(nil), &again); err != nil {
			t.Fatalf("re-encoded command does not decode: %v", err)
		}
		if !reflect.DeepEqual(c, again) {
			t.Fatalf("round trip changed the command: %+v vs %+v", c, again)
		}
		command.DecodeResult(data)
		command.DecodeRecord(data)
	})
}

// fuzzPair is the two state machines FuzzApply feeds, shared by every input
// a fuzz worker runs (creating bbolt files per input is fsync-bound). They
// are emptied before each input (fuzzFSMs), so the target is a function of
// its input: when state carried over, what an input covered (or broke)
// depended on the inputs run before it, a failing input did not fail again
// alone, and the minimizer, which keeps a shorter input only if it covers
// the same code, rejected nearly every one.
var fuzzPair struct {
	once  sync.Once
	dir   string
	a, b  *FSM
	index uint64
}

// fuzzFSMs returns the worker's two state machines, empty, with Raft
// indexes starting again at 1.
func fuzzFSMs(t *testing.T) (*FSM, *FSM) {
	fuzzPair.once.Do(func() {
		dir, err := os.MkdirTemp("", "idemgate-fuzzapply-")
		if err != nil {
			t.Fatal(err)
		}
		fuzzPair.dir = dir
		for i, p := range []**FSM{&fuzzPair.a, &fuzzPair.b} {
			if *p, err = Open(Config{Path: filepath.Join(dir, fmt.Sprint(i, ".db")), NoSync: true}); err != nil {
				t.Fatal(err)
			}
		}
	})
	for _, f := range []*FSM{fuzzPair.a, fuzzPair.b} {
		if err := f.empty(); err != nil {
			t.Fatal(err)
		}
	}
	fuzzPair.index = 0
	return fuzzPair.a, fuzzPair.b
}

// empty drops every bucket's contents and zeroes the clock, the applied
// index and the counters: the state of a new file, in one transaction and
// without an fsync (NoSync), so far cheaper than a new file.
func (f *FSM) empty() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyFormat, currentFormat)
	})
	f.applied.Store(0)
	f.now.Store(0)
	for i := range f.records {
		f.records[i].Store(0)
	}
	for i := range f.expired {
		f.expired[i].Store(0)
	}
	return err
}

// fuzzApplyMaxInput bounds what FuzzApply reads of an input. The fuzzer
// minimizes every input that finds new coverage, trying up to n²/2 shorter
// versions of it (each a run of the target, about 0.2 ms here); in a stream
// of length-prefixed commands most of them break a command and lose the
// coverage, so a 1 KiB input kept a worker minimizing for the whole
// -fuzzminimizetime (60 s), reporting 0 execs/s. 256 bytes (a few
// commands) bounds that to seconds; longer histories are
// determinism_test.go's.
const fuzzApplyMaxInput = 256

// FuzzApply feeds arbitrary command streams to a state machine: nothing
// panics, every log gets a result, and two state machines fed the same
// streams (one batched, one command at a time) hold the same state.
// Seeds are short streams (one command, a begin and its complete) for the
// same reason as fuzzApplyMaxInput.
func FuzzApply(f *testing.F) {
	stream := func(cs ...command.Command) []byte {
		var b []byte
		for _, c := range cs {
			enc := c.Encode(nil)
			b = append(b, byte(len(enc)))
			b = append(b, enc...)
		}
		return b
	}
	for _, c := range sampleCommands() {
		f.Add(stream(c))
	}
	// A begin and the complete of its owner: each input starts at Raft
	// index 1, so the begin's fence is 1.
	key := command.RecordKey("pay", "u1", "k")
	f.Add(stream(command.Command{Type: command.TypeRecordBegin, Key: key, Value: make([]byte, 32), TTL: time.Hour},
		command.Command{Type: command.TypeRecordComplete, Key: key, Fence: 1, Status: 201, Body: []byte("{}")}))
	f.Add([]byte{3, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := fuzzFSMs(t)
		if len(data) > fuzzApplyMaxInput {
			data = data[:fuzzApplyMaxInput]
		}
		var logs []*raft.Log
		for len(data) > 0 && len(logs) < 64 {
			n := int(data[0])
			data = data[1:]
			if n > len(data) {
				n = len(data)
			}
			fuzzPair.index++
			logs = append(logs, &raft.Log{Index: fuzzPair.index, Type: raft.LogCommand, Data: append([]byte(nil), data[:n]...)})
			data = data[n:]
		}
		if len(logs) == 0 {
			return
		}
		if out := a.ApplyBatch(logs); len(out) != len(logs) {
			t.Fatalf("%d results for %d logs", len(out), len(logs))
		}
		for _, l := range logs {
			b.Apply(l)
		}
		if err := errors.Join(a.FailErr(), b.FailErr()); err != nil {
			t.Fatalf("state machine stopped: %v", err)
		}
		ha, _ := a.stateHash()
		hb, _ := b.stateHash()
		if ha != hb {
			t.Fatal("batched and single applies diverged")
		}
	})
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fuzzPair.dir != "" {
		fuzzPair.a.Close()
		fuzzPair.b.Close()
		os.RemoveAll(fuzzPair.dir)
	}
	os.Exit(code)
}

// TestValidateBounds: what every command must satisfy, checked before it is
// proposed and again when decoded.
func TestValidateBounds(t *testing.T) {
	key := []byte("k")
	tests := []struct {
		name string
		c    command.Command
		ok   bool
	}{
		{"plain set", command.Command{Type: command.TypeKVSet, Key: key, TTL: time.Hour}, true},
		{"the longest lifetime", command.Command{Type: command.TypeKVSet, Key: key, TTL: command.MaxTTL}, true},
		{"a lifetime that would overflow the expiry", command.Command{Type: command.TypeKVSet, Key: key, TTL: 2562047 * time.Hour}, false},
		{"a processing timeout that would overflow", command.Command{Type: command.TypeRecordBegin, Key: key, Timeout: command.MaxTTL + 1}, false},
		{"negative ttl", command.Command{Type: command.TypeKVSet, Key: key, TTL: -1}, false},
		{"the longest key", command.Command{Type: command.TypeKVSet, Key: make([]byte, command.MaxStoredKeyLen)}, true},
		{"a key over the bound", command.Command{Type: command.TypeKVSet, Key: make([]byte, command.MaxStoredKeyLen+1)}, false},
		{"no key", command.Command{Type: command.TypeTokenConsume}, false},
	}
	for _, tt := range tests {
		err := tt.c.Validate()
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, command.ErrBadCommand)) {
			t.Errorf("%s: Validate = %v, want ok %v", tt.name, err, tt.ok)
		}
		var d command.Command
		if derr := command.Decode(tt.c.Encode(nil), &d); (derr == nil) != tt.ok {
			t.Errorf("%s: Decode = %v, want ok %v", tt.name, derr, tt.ok)
		}
	}
}

// TestDecodeVersion1Begin: a begin written by the previous encoding (the
// digest key in Body, the window in Version) decodes into the typed fields,
// so a log written by an older build replays the same.
func TestDecodeVersion1Begin(t *testing.T) {
	c := command.Command{Type: command.TypeRecordBegin, Key: []byte("k"), TTL: time.Hour, DigestKey: []byte("digest"), Window: 5 * time.Minute}
	v2 := c.Encode(nil)
	// The same command as version 1 wrote it: the envelope byte 1, no
	// trailing fields, the digest key and window in Body and Version.
	old := command.Command{Type: command.TypeRecordBegin, Key: []byte("k"), TTL: time.Hour, Body: []byte("digest"), Version: uint64(5 * time.Minute)}
	v1 := old.Encode(nil)
	v1 = v1[:len(v1)-2] // drop the version-2 fields (an empty DigestKey, a zero Window)
	v1[0] = 1           // version 1's envelope byte
	var got command.Command
	if err := command.Decode(v1, &got); err != nil {
		t.Fatal(err)
	}
	if string(got.DigestKey) != "digest" || got.Window != 5*time.Minute || got.Body != nil || got.Version != 0 {
		t.Fatalf("version 1 begin decoded as %+v", got)
	}
	var again command.Command
	if err := command.Decode(v2, &again); err != nil || string(again.DigestKey) != "digest" || again.Window != 5*time.Minute {
		t.Fatalf("version 2 begin decoded as %+v, %v", again, err)
	}
	if typ, err := command.PeekType(v1); err != nil || typ != command.TypeRecordBegin || command.Stamp(v1, 1) != nil {
		t.Fatalf("a version 1 envelope is not read: %v %v", typ, err)
	}
}
