package command_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	. "github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/ttl"
)

// harness applies commands to a real state machine (package fsm) in
// order, at a clock the test moves.
type harness struct {
	t     *testing.T
	f     *fsm.FSM
	index uint64
	clock int64
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	f, err := fsm.Open(fsm.Config{Path: filepath.Join(t.TempDir(), "fsm.db"), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &harness{t: t, f: f}
}

func (h *harness) advance(d time.Duration) { h.clock += int64(d) }

func (h *harness) apply(c Command) *Result {
	h.t.Helper()
	h.index++
	c.Stamp = h.clock
	r, ok := h.f.Apply(&raft.Log{Index: h.index, Term: 1, Type: raft.LogCommand, Data: c.Encode(nil)}).(*Result)
	if !ok {
		h.t.Fatalf("Apply(%s) returned %T", c.Type, r)
	}
	return r
}

func reqID(b byte) ReqID { return ReqID{0: 0xAA, 15: b} }

// tableSamples is one command per type, made by its constructor with every
// argument set, each of which does something on the state tableSetup
// leaves.
func tableSamples() map[Type]*Command {
	var fp Fingerprint
	fp[0] = 7
	rk := RecordKey("pay", "u1", "held")
	return map[Type]*Command{
		TypeNoop: NoopCommand([]byte("tick")),
		TypeRecordBegin: RecordBeginCommand(BeginRequest{Key: RecordKey("pay", "u1", "new"), Fingerprint: []byte("fp"),
			TTL: time.Hour, Timeout: 30 * time.Second, ReleaseUnknown: true,
			DigestKey: DigestKey("pay", "u1", []byte("digest")), Window: 5 * time.Minute, RejectSuspect: true}),
		TypeRecordComplete: RecordCompleteCommand(CompleteRequest{Key: rk, Fence: 1, Status: 201,
			Headers: []Header{{Name: []byte("Content-Type"), Value: []byte("text/plain")}}, Body: []byte("done"), BodyDropped: true}),
		TypeRecordRelease: RecordReleaseCommand(rk, 1),
		TypeExpire:        ExpireCommand([]ttl.Entry{{Kind: ttl.KindKV, Key: []byte("short"), At: tableStamp + int64(time.Millisecond)}}),
		TypeTokenIssue:    TokenIssueCommand(TokenKey("form", "new"), time.Hour),
		TypeTokenConsume:  TokenConsumeCommand(TokenKey("form", "held")),
		TypeKVSet: KVSetCommand(KVSetRequest{Key: []byte("n"), Value: []byte("v"), TTL: time.Hour, Mode: SetCAS,
			Version: 2, ReturnOld: true}),
		TypeKVGetDel:      KVGetDelCommand([]byte("n"), 2),
		TypeKVDelete:      KVDeleteCommand([]byte("n")),
		TypeKVIncr:        KVIncrCommand([]byte("n"), 7),
		TypeKVExpire:      KVExpireCommand([]byte("n"), time.Hour, FlagExpireNX),
		TypeClusterID:     ClusterIDCommand(ClusterID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}),
		TypeMemberRemoved: MemberRemovedCommand("n3", []Fingerprint{fp}),
		TypeKVRead:        KVReadCommand([]byte("short"), true),
		TypeKVTx: KVTxCommand(TxRequest{Watches: []Watch{{Key: []byte("n"), Version: 2}},
			Commands: []*Command{KVIncrCommand([]byte("n"), 1), KVReadCommand([]byte("n"), true)}, ReplyBudget: 100}),
		TypeScriptEffects: scriptSample(),
		TypeKVSetRange:    KVAppendCommand([]byte("n"), []byte("9"), 1024),
		TypeKVIncrFloat:   KVIncrFloatCommand([]byte("n"), []byte("0.5")),
		TypeKVRename:      KVRenameCommand([]byte("n"), []byte("short"), RenameCopy, true),
		TypeOnceBegin:     OnceBeginCommand(OnceKey("jobs", "new"), OnceFingerprint([]byte("p")), 30*time.Second, time.Hour),
		TypeOnceRenew:     OnceRenewCommand(OnceKey("jobs", "held"), tableOnceFence, 30*time.Second),
		TypeOnceComplete:  OnceCompleteCommand(OnceKey("jobs", "held"), tableOnceFence, []byte("sent"), time.Hour),
		TypeOnceRelease:   OnceReleaseCommand(OnceKey("jobs", "held"), tableOnceFence),
		TypeLockAcquire:   LockAcquireCommand([]byte("held"), tableLockOwner(2), 10*time.Second, 5*time.Second),
		TypeLockRenew:     LockRenewCommand([]byte("held"), tableLockFence, 10*time.Second),
		TypeLockRelease:   LockReleaseCommand([]byte("held"), tableLockFence),
		TypeLockLeave:     LockLeaveCommand([]byte("held"), tableLockOwner(1), 0),
		TypeListPush:      ListPushCommand([]byte("l"), [][]byte{[]byte("x"), []byte("y")}, true, true),
		TypeListPop:       ListPopCommand([][]byte{[]byte("none"), []byte("l")}, true, 2),
		TypeListRem:       ListRemCommand([]byte("l"), []byte("a"), -1),
		TypeListTrim:      ListTrimCommand([]byte("l"), 1, -2),
		TypeKVFlush:       KVFlushCommand(0, false, 0, nil),
		TypeListMove:      ListMoveCommand([]byte("l"), []byte("m"), true, true),
		TypeListSet:       ListSetCommand([]byte("l"), -1, []byte("z")),
		TypeListInsert:    ListInsertCommand([]byte("l"), []byte("b"), []byte("z"), true),
		TypeCollPut:       HashSetCommand([]byte("h"), [][]byte{[]byte("f1"), []byte("x"), []byte("f3"), []byte("y")}, false),
		TypeCollDel:       CollDelCommand([]byte("s"), [][]byte{[]byte("a"), []byte("z")}, true),
		TypeHashIncr:      HashIncrCommand([]byte("h"), []byte("n"), []byte("3"), false),
		TypeCollRead:      CollReadCommand([]byte("h"), false, ReadFields, [][]byte{[]byte("f1"), []byte("q")}, 0, 0, false),
		TypeSetPop:        SetPopCommand([]byte("s"), 7, 2),
		TypeSetMove:       SetMoveCommand([]byte("s"), []byte("t"), []byte("b")),
		TypeSetStore:      SetStoreCommand([]byte("u"), [][]byte{[]byte("s"), []byte("none")}, StoreUnion),
		TypeZAdd:          ZAddCommand([]byte("z"), []float64{1, 2}, [][]byte{[]byte("a"), []byte("b")}, ZAddCH),
		TypeZRemRange:     ZRemRangeCommand([]byte("z"), ZRangeSpec{By: ZByRank, Start: 0, Stop: 0, Limit: -1}, true),
		TypeZStore:        ZCombineStoreCommand([]byte("u"), [][]byte{[]byte("z"), []byte("s")}, ZStoreUnion, []float64{1, 2}, ZAggSum),
		TypeStreamAdd:     XAddCommand([]byte("x"), XAddExplicit, StreamID{1, 2}, [][]byte{[]byte("f"), []byte("v")}, StreamTrim{Strategy: TrimMaxLen, Approx: true, MaxLen: 5, Limit: 7}, true),
		TypeStreamTrim:    XTrimCommand([]byte("x"), StreamTrim{Strategy: TrimMinID, MinID: StreamID{3, 4}}),
		TypeStreamDel:     XDelCommand([]byte("x"), []StreamID{{1, 2}, {5, 6}}),
		TypeStreamSetID:   XSetIDCommand([]byte("x"), StreamID{9, 9}, 4, StreamID{2, 2}),
		TypeStreamRead:    StreamRangeCommand([]byte("x"), StreamID{1, 0}, MaxStreamID, 10, true),
		TypeStreamGroup: StreamGroupCommand([]byte("s"), [][]byte{[]byte("t")}, GroupRead,
			GroupArgs{Group: []byte("g"), Consumer: []byte("c"), IDs: []StreamID{MaxStreamID, {1, 2}}, Count: 3, Flags: GroupNoAck}),
		TypeStreamGroupRead: StreamGroupReadCommand([]byte("s"), GroupPendingRange, GroupArgs{Group: []byte("g"), End: MaxStreamID, Count: 10}),
	}
}

// tableOnceFence is the fence of the claim tableSetup begins: the revision
// of its fifth command.
const tableOnceFence = 5

// tableLockFence is the fence of the lock "held" tableSetup takes (owner
// tableLockOwner(1)): the revision of its sixth command.
const tableLockFence = 6

func tableLockOwner(n byte) []byte { return bytes.Repeat([]byte{n}, LockOwnerLen) }

// scriptSample is a script's INCR of "n", as tableSetup leaves it.
func scriptSample() *Command {
	sb := fsm.NewSandbox(tableStamp+int64(time.Second), func(key []byte) (KVEntry, bool, error) {
		if string(key) == "n" {
			return KVEntry{Version: 2, Created: 2, Value: []byte("5")}, true, nil
		}
		return KVEntry{}, false, nil
	}, nil)
	if _, err := sb.Apply(KVIncrCommand([]byte("n"), 1)); err != nil {
		panic(err)
	}
	return sb.Effects()
}

const tableStamp = int64(1_767_225_600_000_000_000) // 2026-01-01

// tableSetup leaves a record owned by fence 1, a KV key "n" = 5 at version
// 2, a key "short" that expires a millisecond later, a token, a once
// claim begun with a minute's lease, a list "l" of a, b, c, a, a hash "h"
// of f1 and f2 and a set "s" of a, b, c.
func tableSetup(h *harness) {
	h.clock = tableStamp
	h.apply(Command{Type: TypeRecordBegin, Key: RecordKey("pay", "u1", "held"), Value: []byte("fp"), TTL: time.Hour})
	h.apply(Command{Type: TypeKVSet, Key: []byte("n"), Value: []byte("5")})
	h.apply(Command{Type: TypeKVSet, Key: []byte("short"), Value: []byte("x"), TTL: time.Millisecond})
	h.apply(Command{Type: TypeTokenIssue, Key: TokenKey("form", "held"), TTL: time.Hour})
	if r := h.apply(*OnceBeginCommand(OnceKey("jobs", "held"), OnceFingerprint([]byte("p")), time.Minute, time.Hour)); r.Fence != tableOnceFence {
		h.t.Fatalf("the claim's fence is %d, want %d", r.Fence, tableOnceFence)
	}
	if r := h.apply(*LockAcquireCommand([]byte("held"), tableLockOwner(1), time.Minute, 0)); r.Fence != tableLockFence {
		h.t.Fatalf("the lock's fence is %d, want %d", r.Fence, tableLockFence)
	}
	h.apply(*ListPushCommand([]byte("l"), [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("a")}, true, false))
	h.apply(*HashSetCommand([]byte("h"), [][]byte{[]byte("f1"), []byte("1"), []byte("f2"), []byte("2")}, false))
	h.apply(*SetAddCommand([]byte("s"), [][]byte{[]byte("a"), []byte("b"), []byte("c")}))
	h.advance(time.Second)
}

// TestCommandTableUses holds the table's field lists true: a constructor
// sets no field its row does not list, and a command applies the same,
// result and state, whatever the fields its row does not list hold.
func TestCommandTableUses(t *testing.T) {
	samples := tableSamples()
	for typ := TypeNoop; typ < 255; typ++ {
		if !typ.Known() {
			continue
		}
		c, ok := samples[typ]
		if !ok {
			t.Fatalf("no sample of %s", typ)
		}
		if c.Type != typ {
			t.Fatalf("the constructor of %s made a %s", typ, c.Type)
		}
		if extra := ExtraFields(c); extra != 0 {
			t.Errorf("%s's constructor sets fields its row does not list: %b", typ, extra)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%s's sample: %v", typ, err)
		}
		junk := WithJunk(*c)
		if err := junk.Validate(); err != nil {
			t.Fatalf("%s with junk in its unused fields: %v", typ, err)
		}
		var results [2]*Result
		var hashes [2][32]byte
		for i, cmd := range []Command{*c, junk} {
			h := newHarness(t)
			tableSetup(h)
			cmd.ReqID = reqID(byte(typ))
			results[i] = h.apply(cmd)
			var err error
			if hashes[i], err = h.f.DataHash(); err != nil {
				t.Fatal(err)
			}
		}
		if results[0].Code == CodeBadCommand || results[0].Code == CodeStorage {
			t.Errorf("%s's sample failed: %+v", typ, results[0])
		}
		if !bytes.Equal(results[0].Encode(nil), results[1].Encode(nil)) || hashes[0] != hashes[1] {
			t.Errorf("%s reads a field its row does not list: %+v with junk, %+v without", typ, results[1], results[0])
		}
	}
}
