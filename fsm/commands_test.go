package fsm

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/idemgate/idemgate/ttl"
)

// TestCommandTable: every type of the log format has a row, and the rows'
// properties are the rules the state machine and its proposer followed
// before they were one table: which commands a request id makes apply once
// (all but no-ops, sweeps and the cluster's facts), which pass the disk
// guard (sweeps and the cluster's facts) and which need a key; a
// transaction holds the KV keyspace's commands, each of one key.
func TestCommandTable(t *testing.T) {
	notRemembered := map[Type]bool{TypeNoop: true, TypeExpire: true, TypeClusterID: true, TypeMemberRemoved: true, TypeKVRead: true}
	diskLow := map[Type]bool{TypeNoop: true, TypeExpire: true, TypeClusterID: true, TypeMemberRemoved: true, TypeKVFlush: true}
	keyless := map[Type]bool{TypeNoop: true, TypeExpire: true, TypeClusterID: true, TypeKVTx: true, TypeScriptEffects: true, TypeKVFlush: true}
	inTx := map[Type]bool{TypeKVSet: true, TypeKVGetDel: true, TypeKVDelete: true, TypeKVIncr: true, TypeKVExpire: true, TypeKVRead: true,
		TypeKVSetRange: true, TypeKVIncrFloat: true, TypeKVRename: true,
		TypeListPush: true, TypeListPop: true, TypeListRem: true, TypeListTrim: true}
	names := map[string]Type{}
	for typ := TypeNoop; typ < typeEnd; typ++ {
		if typ == typeMarkUnknownRetired {
			continue
		}
		s := typ.spec()
		if s == nil || s.name == "" || s.apply == nil {
			t.Fatalf("type %d has no complete row: %+v", typ, s)
		}
		if other, dup := names[s.name]; dup {
			t.Fatalf("types %d and %d are both named %q", other, typ, s.name)
		}
		names[s.name] = typ
		if typ.String() != s.name {
			t.Errorf("Type(%d).String() = %q, want %q", typ, typ.String(), s.name)
		}
		if s.remembered == notRemembered[typ] {
			t.Errorf("%s: remembered = %v", typ, s.remembered)
		}
		if s.diskLow != diskLow[typ] || typ.AllowedWhenDiskLow() != diskLow[typ] {
			t.Errorf("%s: allowed when the disk is low = %v", typ, s.diskLow)
		}
		if s.key == keyless[typ] {
			t.Errorf("%s: needs a key = %v", typ, s.key)
		}
		if InTx(typ) != inTx[typ] || (s.tx && !s.key) {
			t.Errorf("%s: a transaction may hold it = %v", typ, InTx(typ))
		}
		if s.key && s.uses&fKey == 0 {
			t.Errorf("%s needs a key it does not use", typ)
		}
	}
	for _, typ := range []Type{TypeUnknown, typeMarkUnknownRetired, typeEnd, 200, 255} {
		if typ.spec() != nil || typ.AllowedWhenDiskLow() {
			t.Errorf("type %d is applied or passes the disk guard", typ)
		}
		c := Command{Type: typ, Key: []byte("k")}
		if err := c.Validate(); !errors.Is(err, ErrBadCommand) {
			t.Errorf("Validate(type %d) = %v, want ErrBadCommand", typ, err)
		}
	}
	if TypeUnknown.String() != "unknown" || Type(200).String() != "type(200)" {
		t.Errorf("String of unknown types = %q, %q", TypeUnknown.String(), Type(200).String())
	}
}

// setFields is the set of c's fields that are not zero.
func setFields(c *Command) field {
	var f field
	for _, x := range []struct {
		set bool
		f   field
	}{
		{len(c.Key) > 0, fKey}, {len(c.Value) > 0, fValue}, {c.TTL != 0, fTTL}, {c.Timeout != 0, fTimeout},
		{c.Fence != 0, fFence}, {c.Version != 0, fVersion}, {c.Mode != 0, fMode}, {c.Flags != 0, fFlags},
		{c.Status != 0, fStatus}, {len(c.Headers) > 0, fHeaders}, {len(c.Body) > 0, fBody},
		{len(c.Entries) > 0, fEntries}, {len(c.DigestKey) > 0, fDigestKey}, {c.Window != 0, fWindow},
	} {
		if x.set {
			f |= x.f
		}
	}
	return f
}

// withJunk is c with every field it does not use set to something valid
// that another command would read.
func withJunk(c Command, uses field) Command {
	junk := Command{Key: []byte("junk"), Value: []byte("junk"), TTL: 3 * time.Hour, Timeout: 4 * time.Hour,
		Fence: 999, Version: 777, Mode: SetXX, Flags: 0x1f, Status: 299,
		Headers: []Header{{Name: []byte("X-Junk"), Value: []byte("j")}}, Body: []byte("junk"),
		Entries: []ttl.Entry{{Kind: ttl.KindKV, Key: []byte("k"), At: 1}}, DigestKey: []byte("junk"), Window: 7 * time.Minute}
	for _, x := range []struct {
		f   field
		set func()
	}{
		{fKey, func() { c.Key = junk.Key }}, {fValue, func() { c.Value = junk.Value }},
		{fTTL, func() { c.TTL = junk.TTL }}, {fTimeout, func() { c.Timeout = junk.Timeout }},
		{fFence, func() { c.Fence = junk.Fence }}, {fVersion, func() { c.Version = junk.Version }},
		{fMode, func() { c.Mode = junk.Mode }}, {fFlags, func() { c.Flags = junk.Flags }},
		{fStatus, func() { c.Status = junk.Status }}, {fHeaders, func() { c.Headers = junk.Headers }},
		{fBody, func() { c.Body = junk.Body }}, {fEntries, func() { c.Entries = junk.Entries }},
		{fDigestKey, func() { c.DigestKey = junk.DigestKey }}, {fWindow, func() { c.Window = junk.Window }},
	} {
		if uses&x.f == 0 {
			x.set()
		}
	}
	return c
}

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
	sb := NewSandbox(tableStamp+int64(time.Second), func(key []byte) (KVEntry, bool, error) {
		if string(key) == "n" {
			return KVEntry{Version: 2, Created: 2, Value: []byte("5")}, true, nil
		}
		return KVEntry{}, false, nil
	})
	if _, err := sb.Apply(KVIncrCommand([]byte("n"), 1)); err != nil {
		panic(err)
	}
	return sb.Effects()
}

const tableStamp = int64(1_767_225_600_000_000_000) // 2026-01-01

// tableSetup leaves a record owned by fence 1, a KV key "n" = 5 at version
// 2, a key "short" that expires a millisecond later, a token, a once
// claim begun with a minute's lease, and a list "l" of a, b, c, a.
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
	h.advance(time.Second)
}

// TestCommandTableUses holds the table's field lists true: a constructor
// sets no field its row does not list, and a command applies the same,
// result and state, whatever the fields its row does not list hold.
func TestCommandTableUses(t *testing.T) {
	samples := tableSamples()
	for typ := TypeNoop; typ < typeEnd; typ++ {
		if typ == typeMarkUnknownRetired {
			continue
		}
		c, ok := samples[typ]
		if !ok {
			t.Fatalf("no sample of %s", typ)
		}
		if c.Type != typ {
			t.Fatalf("the constructor of %s made a %s", typ, c.Type)
		}
		uses := typ.spec().uses
		if extra := setFields(c) &^ uses; extra != 0 {
			t.Errorf("%s's constructor sets fields its row does not list: %b", typ, extra)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%s's sample: %v", typ, err)
		}
		junk := withJunk(*c, uses)
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
			if hashes[i], err = h.f.stateHash(); err != nil {
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

// TestConstructorsEncodeAsBefore: each constructor's command encodes to the
// bytes the same operation was logged as before the constructors existed
// (taken from that build): logs and snapshots written then replay the same.
func TestConstructorsEncodeAsBefore(t *testing.T) {
	var fp Fingerprint
	for i := range fp {
		fp[i] = byte(i)
	}
	tests := []struct {
		name string
		c    *Command
		want string
	}{
		{"noop", NoopCommand([]byte("tick")),
			"0201a00102030405060708090a0b0c0d0eaf17979cfe362a000000047469636b000000000000000000000000"},
		{"record_begin", RecordBeginCommand(BeginRequest{Key: RecordKey("pay", "u1", "k"), Fingerprint: []byte("fp"),
			TTL: 24 * time.Hour, Timeout: 30 * time.Second, ReleaseUnknown: true, DigestKey: []byte("dg"), Window: 5 * time.Minute,
			RejectSuspect: true}),
			"0202a00102030405060708090a0b0c0d0eaf17979cfe362a000008706179007531006b0266708080f89492a52780b09dc2df01000000030000000002646780e0a596bb11"},
		{"record_complete", RecordCompleteCommand(CompleteRequest{Key: []byte("k"), Fence: 7, Status: 201,
			Headers: []Header{{Name: []byte("Content-Type"), Value: []byte("application/json")}}, Body: []byte("{}"), BodyDropped: true}),
			"0203a00102030405060708090a0b0c0d0eaf17979cfe362a0000016b00000007000001c901010c436f6e74656e742d54797065106170706c69636174696f6e2f6a736f6e027b7d000000"},
		{"record_release", RecordReleaseCommand([]byte("k"), 7),
			"0204a00102030405060708090a0b0c0d0eaf17979cfe362a0000016b00000007000000000000000000"},
		{"expire", ExpireCommand([]ttl.Entry{{Kind: ttl.KindKV, Key: []byte("a"), At: 123}, {Kind: ttl.KindRecord, Key: []byte("b"), At: 456}}),
			"0206a00102030405060708090a0b0c0d0eaf17979cfe362a000000000000000000000000000203f601016101900701620000"},
		{"token_issue", TokenIssueCommand(TokenKey("form", "t"), 30*time.Minute),
			"0207a00102030405060708090a0b0c0d0eaf17979cfe362a000006666f726d00740080c0e285e3680000000000000000000000"},
		{"token_consume", TokenConsumeCommand(TokenKey("form", "t")),
			"0208a00102030405060708090a0b0c0d0eaf17979cfe362a000006666f726d007400000000000000000000000000"},
		{"kv_set nx get", KVSetCommand(KVSetRequest{Key: []byte("k"), Value: []byte("v"), TTL: time.Second, Mode: SetNX, ReturnOld: true}),
			"0209a00102030405060708090a0b0c0d0eaf17979cfe362a0000016b017680a8d6b9070000000102000000000000"},
		{"kv_set xx keepttl", KVSetCommand(KVSetRequest{Key: []byte("k"), Value: []byte("v"), Mode: SetXX, KeepTTL: true}),
			"0209a00102030405060708090a0b0c0d0eaf17979cfe362a0000016b0176000000000301000000000000"},
		{"kv_set cas", KVSetCommand(KVSetRequest{Key: []byte("k"), Value: []byte("v"), Mode: SetCAS, Version: 42}),
			"0209a00102030405060708090a0b0c0d0eaf17979cfe362a0000016b01760000002a0200000000000000"},
		{"kv_getdel", KVGetDelCommand([]byte("k"), 9),
			"020aa00102030405060708090a0b0c0d0eaf17979cfe362a0000016b00000000090000000000000000"},
		{"kv_delete", KVDeleteCommand([]byte("k")),
			"020ba00102030405060708090a0b0c0d0eaf17979cfe362a0000016b00000000000000000000000000"},
		{"kv_incr", KVIncrCommand([]byte("k"), -100),
			"020ca00102030405060708090a0b0c0d0eaf17979cfe362a0000016b042d313030000000000000000000000000"},
		{"kv_expire", KVExpireCommand([]byte("k"), 10*time.Second, FlagExpireGT),
			"020da00102030405060708090a0b0c0d0eaf17979cfe362a0000016b008090dfc04a0000000004000000000000"},
		{"cluster_id", ClusterIDCommand(ClusterID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}),
			"020ea00102030405060708090a0b0c0d0eaf17979cfe362a000000100102030405060708090a0b0c0d0e0f10000000000000000000000000"},
		{"member_removed", MemberRemovedCommand("n3", []Fingerprint{fp}),
			"020fa00102030405060708090a0b0c0d0eaf17979cfe362a0000026e3320000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f000000000000000000000000"},
	}
	for _, tt := range tests {
		tt.c.ReqID = ReqID{0xa0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xaf}
		tt.c.Stamp = 1_700_000_000_000_000_000
		if got := hex.EncodeToString(tt.c.Encode(nil)); got != tt.want {
			t.Errorf("%s encodes as\n%s, want\n%s", tt.name, got, tt.want)
		}
		var d Command
		if err := Decode(tt.c.Encode(nil), &d); err != nil {
			t.Errorf("%s does not decode: %v", tt.name, err)
		}
	}
}
