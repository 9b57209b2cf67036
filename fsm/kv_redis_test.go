package fsm

import (
	"errors"
	"testing"
	"time"
)

// TestRedisKVCommands: SET's XX, KEEPTTL and GET, INCRBY and EXPIRE, each
// one command, on the state machine's clock.
func TestRedisKVCommands(t *testing.T) {
	k := []byte("k")
	set := func(v string, ttl time.Duration, mode SetMode, flags byte) Command {
		return Command{Type: TypeKVSet, Key: k, Value: []byte(v), TTL: ttl, Mode: mode, Flags: flags}
	}
	incr := func(d string) Command { return Command{Type: TypeKVIncr, Key: k, Value: []byte(d)} }
	expire := func(ttl time.Duration, flags byte) Command {
		return Command{Type: TypeKVExpire, Key: k, TTL: ttl, Flags: flags}
	}
	del := Command{Type: TypeKVGetDel, Key: k}
	get := Command{Type: TypeKVRead, Key: k, Flags: FlagReadValue}
	tests := []struct {
		name  string
		steps []step
	}{
		{"xx needs the key", []step{
			{cmd: set("a", 0, SetXX, 0), code: CodeNotFound},
			{cmd: set("a", 0, SetPlain, 0), code: CodeCreated},
			{cmd: set("b", 0, SetXX, FlagReturnOld), code: CodeOK, value: "a"},
			{cmd: del, code: CodeOK, value: "b"},
		}},
		{"get returns the old value, set or not", []step{
			{cmd: set("a", 0, SetNX, FlagReturnOld), code: CodeCreated},
			{cmd: set("b", 0, SetNX, FlagReturnOld), code: CodeExists, value: "a"},
			{cmd: set("c", 0, SetPlain, FlagReturnOld), code: CodeOK, value: "a"},
			{cmd: del, code: CodeOK, value: "c"},
		}},
		{"keepttl keeps the lifetime, a plain set drops it", []step{
			{cmd: set("a", 2*time.Second, SetPlain, 0), code: CodeCreated},
			{cmd: set("b", 0, SetPlain, FlagKeepTTL), code: CodeOK},
			{advance: 3 * time.Second, cmd: del, code: CodeNotFound},
			{cmd: set("a", 2*time.Second, SetPlain, 0), code: CodeCreated},
			{cmd: set("b", 0, SetPlain, 0), code: CodeOK},
			{advance: 3 * time.Second, cmd: del, code: CodeOK, value: "b"},
		}},
		{"incr counts from zero and keeps the lifetime", []step{
			{cmd: incr("1"), code: CodeCreated, value: "1"},
			{cmd: incr("41"), code: CodeOK, value: "42"},
			{cmd: incr("-50"), code: CodeOK, value: "-8"},
			{cmd: expire(2*time.Second, 0), code: CodeOK},
			{cmd: incr("8"), code: CodeOK, value: "0"},
			{advance: 3 * time.Second, cmd: incr("5"), code: CodeCreated, value: "5"},
		}},
		{"incr refuses what is not an integer, and overflow", []step{
			{cmd: set("12a", 0, SetPlain, 0), code: CodeCreated},
			{cmd: incr("1"), code: CodeNotInteger},
			{cmd: set(" 1", 0, SetPlain, 0), code: CodeOK},
			{cmd: incr("1"), code: CodeNotInteger},
			{cmd: set("9223372036854775806", 0, SetPlain, 0), code: CodeOK},
			{cmd: incr("1"), code: CodeOK, value: "9223372036854775807"},
			{cmd: incr("1"), code: CodeOverflow},
			{cmd: set("-9223372036854775808", 0, SetPlain, 0), code: CodeOK},
			{cmd: incr("-1"), code: CodeOverflow},
			{cmd: incr("0"), code: CodeOK, value: "-9223372036854775808"},
		}},
		{"expire, its conditions, persist", []step{
			{cmd: expire(time.Second, 0), code: CodeNotFound},
			{cmd: set("a", 0, SetPlain, 0), code: CodeCreated},
			{cmd: expire(0, 0), code: CodeUnchanged}, // persist without a lifetime
			{cmd: expire(5*time.Second, FlagExpireXX), code: CodeUnchanged},
			{cmd: expire(5*time.Second, FlagExpireGT), code: CodeUnchanged}, // none counts as forever
			{cmd: expire(5*time.Second, FlagExpireNX), code: CodeOK},
			{cmd: expire(9*time.Second, FlagExpireNX), code: CodeUnchanged},
			{cmd: expire(9*time.Second, FlagExpireLT), code: CodeUnchanged},
			{cmd: expire(2*time.Second, FlagExpireLT), code: CodeOK},
			{cmd: expire(9*time.Second, FlagExpireGT), code: CodeOK},
			{cmd: expire(0, 0), code: CodeOK}, // persist
			{advance: 20 * time.Second, cmd: set("b", 0, SetXX, FlagReturnOld), code: CodeOK, value: "a"},
			{cmd: expire(time.Second, 0), code: CodeOK},
			{advance: 2 * time.Second, cmd: set("c", 0, SetXX, 0), code: CodeNotFound},
		}},
		{"expire now deletes", []step{
			{cmd: set("a", time.Minute, SetPlain, 0), code: CodeCreated},
			{cmd: expire(0, FlagExpireNow|FlagExpireNX), code: CodeUnchanged},
			{cmd: expire(0, FlagExpireNow), code: CodeOK},
			{cmd: del, code: CodeNotFound},
		}},
		{"setrange and append: the bound, padding, the lifetime kept", []step{
			{cmd: *KVSetRangeCommand(k, 3, []byte("ab"), 5), code: CodeCreated, value: "5"},
			{cmd: *KVAppendCommand(k, []byte("c"), 5), code: CodeTooLong},
			{cmd: *KVSetRangeCommand(k, 5, []byte("c"), 5), code: CodeTooLong},
			{cmd: *KVSetRangeCommand(k, 1<<63, []byte("c"), 5), code: CodeTooLong}, // no wrap past the bound
			{cmd: *KVSetRangeCommand(k, 1<<63, nil, 5), code: CodeOK, value: "5"},  // nothing to write
			{cmd: get, code: CodeOK, value: "\x00\x00\x00ab"},
			{cmd: expire(time.Minute, 0), code: CodeOK},
			{cmd: *KVSetRangeCommand(k, 0, []byte("xyz"), 5), code: CodeOK, value: "5"},
			{advance: 2 * time.Minute, cmd: get, code: CodeNotFound}, // the lifetime was kept
			{cmd: *KVAppendCommand(k, nil, 5), code: CodeCreated, value: "0"},
			{cmd: *KVSetRangeCommand([]byte("other"), 1, nil, 5), code: CodeOK, value: "0"},
		}},
		{"incrbyfloat: long double arithmetic, Redis's text", []step{
			{cmd: *KVIncrFloatCommand(k, []byte("0.1")), code: CodeCreated, value: "0.1"},
			{cmd: *KVIncrFloatCommand(k, []byte("0.2")), code: CodeOK, value: "0.3"},
			{cmd: *KVIncrFloatCommand(k, []byte("1e20")), code: CodeOK, value: "100000000000000000000"}, // a 64-bit mantissa: as Redis answers
			{cmd: *KVIncrFloatCommand(k, []byte("inf")), code: CodeNotFinite},
			{cmd: *KVIncrFloatCommand(k, []byte("1e4932")), code: CodeOK},
			{cmd: *KVIncrFloatCommand(k, []byte("1e4932")), code: CodeNotFinite},
			{cmd: set("word", 0, SetPlain, 0), code: CodeOK},
			{cmd: *KVIncrFloatCommand(k, []byte("1")), code: CodeNotFloat},
			{cmd: get, code: CodeOK, value: "word"},
		}},
		{"rename, renamenx, copy: the value and its lifetime move", []step{
			{cmd: *KVRenameCommand(k, []byte("d"), RenamePlain, false), code: CodeNotFound},
			{cmd: set("v", time.Minute, SetPlain, 0), code: CodeCreated},
			{cmd: *KVRenameCommand(k, k, RenameNX, false), code: CodeExists},
			{cmd: *KVRenameCommand(k, k, RenamePlain, false), code: CodeOK},
			{cmd: *KVRenameCommand(k, []byte("d"), RenameCopy, false), code: CodeOK},
			{cmd: *KVRenameCommand(k, []byte("d"), RenameCopy, false), code: CodeExists},
			{cmd: *KVRenameCommand(k, []byte("d"), RenameNX, false), code: CodeExists},
			{cmd: *KVRenameCommand(k, []byte("d"), RenameCopy, true), code: CodeOK},
			{cmd: *KVRenameCommand(k, []byte("e"), RenamePlain, false), code: CodeOK},
			{cmd: get, code: CodeNotFound},
			{cmd: *KVRenameCommand([]byte("e"), k, RenameNX, false), code: CodeOK},
			{cmd: get, code: CodeOK, value: "v"},
			{advance: 2 * time.Minute, cmd: get, code: CodeNotFound}, // the lifetime moved with it
			{cmd: *KVRenameCommand([]byte("d"), k, RenamePlain, false), code: CodeNotFound},
		}},
		{"expire with the value (GETEX)", []step{
			{cmd: expire(time.Second, FlagExpireGet), code: CodeNotFound},
			{cmd: set("v1", 0, SetPlain, 0), code: CodeCreated},
			{cmd: expire(0, FlagExpireGet), code: CodeUnchanged, value: "v1"}, // PERSIST without a lifetime
			{cmd: expire(time.Minute, FlagExpireGet), code: CodeOK, value: "v1"},
			{cmd: expire(0, FlagExpireGet), code: CodeOK, value: "v1"},
			{cmd: expire(time.Minute, FlagExpireGet|FlagExpireXX), code: CodeUnchanged, value: "v1"},
			{cmd: expire(0, FlagExpireGet|FlagExpireNow), code: CodeOK, value: "v1"},
			{cmd: del, code: CodeNotFound},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			for i, s := range tt.steps {
				h.advance(s.advance)
				s.check(t, i, h.apply(s.cmd))
			}
		})
	}
}

// TestRedisKVCommandsValidate: what no replica may apply is refused before
// the log.
func TestRedisKVCommandsValidate(t *testing.T) {
	k := []byte("k")
	bad := []Command{
		{Type: TypeKVSet, Key: k, Mode: SetIfDigestNe + 1},
		{Type: TypeKVSet, Key: k, Mode: SetIfDigestEq, Body: []byte("short")},
		{Type: TypeKVSet, Key: k, Mode: SetIfDigestNe},
		{Type: TypeKVSet, Key: k, Mode: SetNX, Body: []byte("x")},
		{Type: TypeKVSet, Key: k, Body: []byte("x")},
		{Type: TypeKVDelete, Key: k, Mode: SetNX},
		{Type: TypeKVDelete, Key: k, Mode: SetIfEq, Body: []byte("v"), Version: 3},
		{Type: TypeKVDelete, Key: k, Mode: SetIfDigestEq, Body: make([]byte, 9)},
		{Type: TypeKVDelete, Key: k, Body: []byte("x")},
		{Type: TypeKVSet, Key: k, Flags: 1 << 5},
		{Type: TypeKVSet, Key: k, TTL: time.Second, Flags: FlagKeepTTL},
		{Type: TypeKVIncr, Key: k, Value: []byte("1.5")},
		{Type: TypeKVIncr, Key: k, Value: []byte("+1")},
		{Type: TypeKVIncr, Key: k, Value: []byte("01")},
		{Type: TypeKVIncr, Key: k, Value: []byte("-0")},
		{Type: TypeKVIncr, Key: k, Value: []byte("99999999999999999999")},
		{Type: TypeKVIncr, Key: k},
		{Type: TypeKVIncr, Value: []byte("1")},
		{Type: TypeKVExpire, Key: k, Flags: 1 << 6},
		{Type: TypeKVExpire, Key: k, TTL: time.Second, Flags: FlagExpireNow},
		{Type: TypeKVExpire, Key: k, Flags: FlagExpireNX | FlagExpireGT},
		{Type: TypeKVExpire, Key: k, Flags: FlagExpireGT | FlagExpireLT},
		{Type: TypeKVExpire},
		{Type: TypeKVSetRange, Key: k, Value: []byte("x")},
		{Type: TypeKVSetRange, Key: k, Value: []byte("x"), Body: make([]byte, 15)},
		{Type: TypeKVSetRange, Key: k, Value: []byte("x"), Body: make([]byte, 16), Flags: 1 << 1},
		{Type: TypeKVSetRange, Value: []byte("x"), Body: make([]byte, 16)},
		{Type: TypeKVIncrFloat, Key: k, Value: []byte("nan")},
		{Type: TypeKVIncrFloat, Key: k, Value: []byte(" 1")},
		{Type: TypeKVIncrFloat, Key: k},
		{Type: TypeKVIncrFloat, Key: k, Value: []byte("1\x00")},
		{Type: TypeKVIncrFloat, Key: k, Value: []byte("1_0")},
		*KVRenameCommand(k, []byte("\x00node/n1"), RenamePlain, false),
		*KVRenameCommand(k, []byte("\x00"), RenameCopy, true),
		*KVRenameCommand(k, nil, RenameNX, false),
		*KVRenameCommand(k, make([]byte, MaxStoredKeyLen+1), RenamePlain, false),
		{Type: TypeKVRename, Key: k, Value: []byte("d"), Mode: 3},
		{Type: TypeKVRename, Key: k, Value: []byte("d"), Flags: FlagCopyReplace},
		{Type: TypeKVRename, Key: k, Value: []byte("d"), Mode: SetMode(RenameCopy), Flags: 1 << 1},
		{Type: TypeKVRename, Value: []byte("d")},
	}
	for i, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrBadCommand) {
			t.Errorf("%d: Validate(%+v) = %v, want ErrBadCommand", i, c, err)
		}
		var d Command
		if err := Decode(c.Encode(nil), &d); !errors.Is(err, ErrBadCommand) {
			t.Errorf("%d: Decode = %v, want ErrBadCommand", i, err)
		}
	}
}
