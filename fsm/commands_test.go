package fsm

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// TestApplyTable: the applier has a row for exactly the types package
// command's table declares, a sandbox apply for exactly the writes a
// script may make (and its reads of hashes and sets), and remembers a request id for the rules the state machine
// followed before they were one table: all but no-ops, sweeps, reads and
// the cluster's facts.
func TestApplyTable(t *testing.T) {
	notRemembered := map[command.Type]bool{command.TypeNoop: true, command.TypeExpire: true, command.TypeClusterID: true, command.TypeMemberRemoved: true, command.TypeKVRead: true, command.TypeCollRead: true,
		command.TypeStreamRead: true, command.TypeStreamGroupRead: true}
	for i := range 256 {
		typ := command.Type(i)
		s := spec(typ)
		if (s != nil) != typ.Known() || (!typ.Known() && (commands[typ].apply != nil || commands[typ].kv != nil || commands[typ].remembered)) {
			t.Fatalf("%s: declared %v, applied %v", typ, typ.Known(), s != nil)
		}
		if s == nil {
			continue
		}
		if s.remembered == notRemembered[typ] {
			t.Errorf("%s: remembered = %v", typ, s.remembered)
		}
		// A script's reads of a collection (a hash, a set, a sorted set, a
		// stream and its groups) go through the sandbox's apply too; its
		// other reads through its KV.
		collRead := typ == command.TypeCollRead || typ == command.TypeStreamRead || typ == command.TypeStreamGroupRead
		if op := typ.Op(); (s.kv != nil) != (op.Script && (op.Write || collRead)) {
			t.Errorf("%s: a sandbox apply %v, but a script may write with it: %v", typ, s.kv != nil, op.Script && op.Write)
		}
	}
}

// TestConstructorsEncodeAsBefore: each constructor's command encodes to the
// bytes the same operation was logged as before the constructors existed
// (taken from that build): logs and snapshots written then replay the same.
func TestConstructorsEncodeAsBefore(t *testing.T) {
	var fp command.Fingerprint
	for i := range fp {
		fp[i] = byte(i)
	}
	tests := []struct {
		name string
		c    *command.Command
		want string
	}{
		{"noop", command.NoopCommand([]byte("tick")),
			"0201a00102030405060708090a0b0c0d0eaf17979cfe362a000000047469636b000000000000000000000000"},
		{"record_begin", command.RecordBeginCommand(command.BeginRequest{Key: command.RecordKey("pay", "u1", "k"), Fingerprint: []byte("fp"),
			TTL: 24 * time.Hour, Timeout: 30 * time.Second, ReleaseUnknown: true, DigestKey: []byte("dg"), Window: 5 * time.Minute,
			RejectSuspect: true}),
			"0202a00102030405060708090a0b0c0d0eaf17979cfe362a000008706179007531006b0266708080f89492a52780b09dc2df01000000030000000002646780e0a596bb11"},
		{"record_complete", command.RecordCompleteCommand(command.CompleteRequest{Key: []byte("k"), Fence: 7, Status: 201,
			Headers: []command.Header{{Name: []byte("Content-Type"), Value: []byte("application/json")}}, Body: []byte("{}"), BodyDropped: true}),
			"0203a00102030405060708090a0b0c0d0eaf17979cfe362a0000016b00000007000001c901010c436f6e74656e742d54797065106170706c69636174696f6e2f6a736f6e027b7d000000"},
		{"record_release", command.RecordReleaseCommand([]byte("k"), 7),
			"0204a00102030405060708090a0b0c0d0eaf17979cfe362a0000016b00000007000000000000000000"},
		{"expire", command.ExpireCommand([]ttl.Entry{{Kind: ttl.KindKV, Key: []byte("a"), At: 123}, {Kind: ttl.KindRecord, Key: []byte("b"), At: 456}}),
			"0206a00102030405060708090a0b0c0d0eaf17979cfe362a000000000000000000000000000203f601016101900701620000"},
		{"token_issue", command.TokenIssueCommand(command.TokenKey("form", "t"), 30*time.Minute),
			"0207a00102030405060708090a0b0c0d0eaf17979cfe362a000006666f726d00740080c0e285e3680000000000000000000000"},
		{"token_consume", command.TokenConsumeCommand(command.TokenKey("form", "t")),
			"0208a00102030405060708090a0b0c0d0eaf17979cfe362a000006666f726d007400000000000000000000000000"},
		{"kv_set nx get", command.KVSetCommand(command.KVSetRequest{Key: []byte("k"), Value: []byte("v"), TTL: time.Second, Mode: command.SetNX, ReturnOld: true}),
			"0209a00102030405060708090a0b0c0d0eaf17979cfe362a0000016b017680a8d6b9070000000102000000000000"},
		{"kv_set xx keepttl", command.KVSetCommand(command.KVSetRequest{Key: []byte("k"), Value: []byte("v"), Mode: command.SetXX, KeepTTL: true}),
			"0209a00102030405060708090a0b0c0d0eaf17979cfe362a0000016b0176000000000301000000000000"},
		{"kv_set cas", command.KVSetCommand(command.KVSetRequest{Key: []byte("k"), Value: []byte("v"), Mode: command.SetCAS, Version: 42}),
			"0209a00102030405060708090a0b0c0d0eaf17979cfe362a0000016b01760000002a0200000000000000"},
		{"kv_getdel", command.KVGetDelCommand([]byte("k"), 9),
			"020aa00102030405060708090a0b0c0d0eaf17979cfe362a0000016b00000000090000000000000000"},
		{"kv_delete", command.KVDeleteCommand([]byte("k")),
			"020ba00102030405060708090a0b0c0d0eaf17979cfe362a0000016b00000000000000000000000000"},
		{"kv_incr", command.KVIncrCommand([]byte("k"), -100),
			"020ca00102030405060708090a0b0c0d0eaf17979cfe362a0000016b042d313030000000000000000000000000"},
		{"kv_expire", command.KVExpireCommand([]byte("k"), 10*time.Second, command.FlagExpireGT),
			"020da00102030405060708090a0b0c0d0eaf17979cfe362a0000016b008090dfc04a0000000004000000000000"},
		{"cluster_id", command.ClusterIDCommand(command.ClusterID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}),
			"020ea00102030405060708090a0b0c0d0eaf17979cfe362a000000100102030405060708090a0b0c0d0e0f10000000000000000000000000"},
		{"member_removed", command.MemberRemovedCommand("n3", []command.Fingerprint{fp}),
			"020fa00102030405060708090a0b0c0d0eaf17979cfe362a0000026e3320000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f000000000000000000000000"},
	}
	for _, tt := range tests {
		tt.c.ReqID = command.ReqID{0xa0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xaf}
		tt.c.Stamp = 1_700_000_000_000_000_000
		if got := hex.EncodeToString(tt.c.Encode(nil)); got != tt.want {
			t.Errorf("%s encodes as\n%s, want\n%s", tt.name, got, tt.want)
		}
		var d command.Command
		if err := command.Decode(tt.c.Encode(nil), &d); err != nil {
			t.Errorf("%s does not decode: %v", tt.name, err)
		}
	}
}

// scriptSample is a script's INCR of "n" = 5 at version 2.
func scriptSample() *command.Command {
	sb := NewSandbox(tableStamp+int64(time.Second), func(key []byte) (command.KVEntry, bool, error) {
		if string(key) == "n" {
			return command.KVEntry{Version: 2, Created: 2, Value: []byte("5")}, true, nil
		}
		return command.KVEntry{}, false, nil
	}, nil)
	if _, err := sb.Apply(command.KVIncrCommand([]byte("n"), 1)); err != nil {
		panic(err)
	}
	return sb.Effects()
}

const tableStamp = int64(1_767_225_600_000_000_000) // 2026-01-01
