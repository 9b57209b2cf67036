package fsm

import (
	"errors"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// TestRedisKVCommands: SET's XX, KEEPTTL and GET, INCRBY and EXPIRE, each
// one command, on the state machine's clock.
func TestRedisKVCommands(t *testing.T) {
	k := []byte("k")
	set := func(v string, ttl time.Duration, mode command.SetMode, flags byte) command.Command {
		return command.Command{Type: command.TypeKVSet, Key: k, Value: []byte(v), TTL: ttl, Mode: mode, Flags: flags}
	}
	incr := func(d string) command.Command {
		return command.Command{Type: command.TypeKVIncr, Key: k, Value: []byte(d)}
	}
	expire := func(ttl time.Duration, flags byte) command.Command {
		return command.Command{Type: command.TypeKVExpire, Key: k, TTL: ttl, Flags: flags}
	}
	del := command.Command{Type: command.TypeKVGetDel, Key: k}
	get := command.Command{Type: command.TypeKVRead, Key: k, Flags: command.FlagReadValue}
	tests := []struct {
		name  string
		steps []step
	}{
		{"xx needs the key", []step{
			{cmd: set("a", 0, command.SetXX, 0), code: command.CodeNotFound},
			{cmd: set("a", 0, command.SetPlain, 0), code: command.CodeCreated},
			{cmd: set("b", 0, command.SetXX, command.FlagReturnOld), code: command.CodeOK, value: "a"},
			{cmd: del, code: command.CodeOK, value: "b"},
		}},
		{"get returns the old value, set or not", []step{
			{cmd: set("a", 0, command.SetNX, command.FlagReturnOld), code: command.CodeCreated},
			{cmd: set("b", 0, command.SetNX, command.FlagReturnOld), code: command.CodeExists, value: "a"},
			{cmd: set("c", 0, command.SetPlain, command.FlagReturnOld), code: command.CodeOK, value: "a"},
			{cmd: del, code: command.CodeOK, value: "c"},
		}},
		{"keepttl keeps the lifetime, a plain set drops it", []step{
			{cmd: set("a", 2*time.Second, command.SetPlain, 0), code: command.CodeCreated},
			{cmd: set("b", 0, command.SetPlain, command.FlagKeepTTL), code: command.CodeOK},
			{advance: 3 * time.Second, cmd: del, code: command.CodeNotFound},
			{cmd: set("a", 2*time.Second, command.SetPlain, 0), code: command.CodeCreated},
			{cmd: set("b", 0, command.SetPlain, 0), code: command.CodeOK},
			{advance: 3 * time.Second, cmd: del, code: command.CodeOK, value: "b"},
		}},
		{"incr counts from zero and keeps the lifetime", []step{
			{cmd: incr("1"), code: command.CodeCreated, value: "1"},
			{cmd: incr("41"), code: command.CodeOK, value: "42"},
			{cmd: incr("-50"), code: command.CodeOK, value: "-8"},
			{cmd: expire(2*time.Second, 0), code: command.CodeOK},
			{cmd: incr("8"), code: command.CodeOK, value: "0"},
			{advance: 3 * time.Second, cmd: incr("5"), code: command.CodeCreated, value: "5"},
		}},
		{"incr refuses what is not an integer, and overflow", []step{
			{cmd: set("12a", 0, command.SetPlain, 0), code: command.CodeCreated},
			{cmd: incr("1"), code: command.CodeNotInteger},
			{cmd: set(" 1", 0, command.SetPlain, 0), code: command.CodeOK},
			{cmd: incr("1"), code: command.CodeNotInteger},
			{cmd: set("9223372036854775806", 0, command.SetPlain, 0), code: command.CodeOK},
			{cmd: incr("1"), code: command.CodeOK, value: "9223372036854775807"},
			{cmd: incr("1"), code: command.CodeOverflow},
			{cmd: set("-9223372036854775808", 0, command.SetPlain, 0), code: command.CodeOK},
			{cmd: incr("-1"), code: command.CodeOverflow},
			{cmd: incr("0"), code: command.CodeOK, value: "-9223372036854775808"},
		}},
		{"expire, its conditions, persist", []step{
			{cmd: expire(time.Second, 0), code: command.CodeNotFound},
			{cmd: set("a", 0, command.SetPlain, 0), code: command.CodeCreated},
			{cmd: expire(0, 0), code: command.CodeUnchanged}, // persist without a lifetime
			{cmd: expire(5*time.Second, command.FlagExpireXX), code: command.CodeUnchanged},
			{cmd: expire(5*time.Second, command.FlagExpireGT), code: command.CodeUnchanged}, // none counts as forever
			{cmd: expire(5*time.Second, command.FlagExpireNX), code: command.CodeOK},
			{cmd: expire(9*time.Second, command.FlagExpireNX), code: command.CodeUnchanged},
			{cmd: expire(9*time.Second, command.FlagExpireLT), code: command.CodeUnchanged},
			{cmd: expire(2*time.Second, command.FlagExpireLT), code: command.CodeOK},
			{cmd: expire(9*time.Second, command.FlagExpireGT), code: command.CodeOK},
			{cmd: expire(0, 0), code: command.CodeOK}, // persist
			{advance: 20 * time.Second, cmd: set("b", 0, command.SetXX, command.FlagReturnOld), code: command.CodeOK, value: "a"},
			{cmd: expire(time.Second, 0), code: command.CodeOK},
			{advance: 2 * time.Second, cmd: set("c", 0, command.SetXX, 0), code: command.CodeNotFound},
		}},
		{"expire now deletes", []step{
			{cmd: set("a", time.Minute, command.SetPlain, 0), code: command.CodeCreated},
			{cmd: expire(0, command.FlagExpireNow|command.FlagExpireNX), code: command.CodeUnchanged},
			{cmd: expire(0, command.FlagExpireNow), code: command.CodeOK},
			{cmd: del, code: command.CodeNotFound},
		}},
		{"setrange and append: the bound, padding, the lifetime kept", []step{
			{cmd: *command.KVSetRangeCommand(k, 3, []byte("ab"), 5), code: command.CodeCreated, value: "5"},
			{cmd: *command.KVAppendCommand(k, []byte("c"), 5), code: command.CodeTooLong},
			{cmd: *command.KVSetRangeCommand(k, 5, []byte("c"), 5), code: command.CodeTooLong},
			{cmd: *command.KVSetRangeCommand(k, 1<<63, []byte("c"), 5), code: command.CodeTooLong}, // no wrap past the bound
			{cmd: *command.KVSetRangeCommand(k, 1<<63, nil, 5), code: command.CodeOK, value: "5"},  // nothing to write
			{cmd: get, code: command.CodeOK, value: "\x00\x00\x00ab"},
			{cmd: expire(time.Minute, 0), code: command.CodeOK},
			{cmd: *command.KVSetRangeCommand(k, 0, []byte("xyz"), 5), code: command.CodeOK, value: "5"},
			{advance: 2 * time.Minute, cmd: get, code: command.CodeNotFound}, // the lifetime was kept
			{cmd: *command.KVAppendCommand(k, nil, 5), code: command.CodeCreated, value: "0"},
			{cmd: *command.KVSetRangeCommand([]byte("other"), 1, nil, 5), code: command.CodeOK, value: "0"},
		}},
		{"incrbyfloat: long double arithmetic, Redis's text", []step{
			{cmd: *command.KVIncrFloatCommand(k, []byte("0.1")), code: command.CodeCreated, value: "0.1"},
			{cmd: *command.KVIncrFloatCommand(k, []byte("0.2")), code: command.CodeOK, value: "0.3"},
			{cmd: *command.KVIncrFloatCommand(k, []byte("1e20")), code: command.CodeOK, value: "100000000000000000000"}, // a 64-bit mantissa: as Redis answers
			{cmd: *command.KVIncrFloatCommand(k, []byte("inf")), code: command.CodeNotFinite},
			{cmd: *command.KVIncrFloatCommand(k, []byte("1e4932")), code: command.CodeOK},
			{cmd: *command.KVIncrFloatCommand(k, []byte("1e4932")), code: command.CodeNotFinite},
			{cmd: set("word", 0, command.SetPlain, 0), code: command.CodeOK},
			{cmd: *command.KVIncrFloatCommand(k, []byte("1")), code: command.CodeNotFloat},
			{cmd: get, code: command.CodeOK, value: "word"},
		}},
		{"rename, renamenx, copy: the value and its lifetime move", []step{
			{cmd: *command.KVRenameCommand(k, []byte("d"), command.RenamePlain, false), code: command.CodeNotFound},
			{cmd: set("v", time.Minute, command.SetPlain, 0), code: command.CodeCreated},
			{cmd: *command.KVRenameCommand(k, k, command.RenameNX, false), code: command.CodeExists},
			{cmd: *command.KVRenameCommand(k, k, command.RenamePlain, false), code: command.CodeOK},
			{cmd: *command.KVRenameCommand(k, []byte("d"), command.RenameCopy, false), code: command.CodeOK},
			{cmd: *command.KVRenameCommand(k, []byte("d"), command.RenameCopy, false), code: command.CodeExists},
			{cmd: *command.KVRenameCommand(k, []byte("d"), command.RenameNX, false), code: command.CodeExists},
			{cmd: *command.KVRenameCommand(k, []byte("d"), command.RenameCopy, true), code: command.CodeOK},
			{cmd: *command.KVRenameCommand(k, []byte("e"), command.RenamePlain, false), code: command.CodeOK},
			{cmd: get, code: command.CodeNotFound},
			{cmd: *command.KVRenameCommand([]byte("e"), k, command.RenameNX, false), code: command.CodeOK},
			{cmd: get, code: command.CodeOK, value: "v"},
			{advance: 2 * time.Minute, cmd: get, code: command.CodeNotFound}, // the lifetime moved with it
			{cmd: *command.KVRenameCommand([]byte("d"), k, command.RenamePlain, false), code: command.CodeNotFound},
		}},
		{"expire with the value (GETEX)", []step{
			{cmd: expire(time.Second, command.FlagExpireGet), code: command.CodeNotFound},
			{cmd: set("v1", 0, command.SetPlain, 0), code: command.CodeCreated},
			{cmd: expire(0, command.FlagExpireGet), code: command.CodeUnchanged, value: "v1"}, // PERSIST without a lifetime
			{cmd: expire(time.Minute, command.FlagExpireGet), code: command.CodeOK, value: "v1"},
			{cmd: expire(0, command.FlagExpireGet), code: command.CodeOK, value: "v1"},
			{cmd: expire(time.Minute, command.FlagExpireGet|command.FlagExpireXX), code: command.CodeUnchanged, value: "v1"},
			{cmd: expire(0, command.FlagExpireGet|command.FlagExpireNow), code: command.CodeOK, value: "v1"},
			{cmd: del, code: command.CodeNotFound},
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
	bad := []command.Command{
		{Type: command.TypeKVSet, Key: k, Mode: command.SetIfDigestNe + 1},
		{Type: command.TypeKVSet, Key: k, Mode: command.SetIfDigestEq, Body: []byte("short")},
		{Type: command.TypeKVSet, Key: k, Mode: command.SetIfDigestNe},
		{Type: command.TypeKVSet, Key: k, Mode: command.SetNX, Body: []byte("x")},
		{Type: command.TypeKVSet, Key: k, Body: []byte("x")},
		{Type: command.TypeKVDelete, Key: k, Mode: command.SetNX},
		{Type: command.TypeKVDelete, Key: k, Mode: command.SetIfEq, Body: []byte("v"), Version: 3},
		{Type: command.TypeKVDelete, Key: k, Mode: command.SetIfDigestEq, Body: make([]byte, 9)},
		{Type: command.TypeKVDelete, Key: k, Body: []byte("x")},
		{Type: command.TypeKVSet, Key: k, Flags: 1 << 5},
		{Type: command.TypeKVSet, Key: k, TTL: time.Second, Flags: command.FlagKeepTTL},
		{Type: command.TypeKVIncr, Key: k, Value: []byte("1.5")},
		{Type: command.TypeKVIncr, Key: k, Value: []byte("+1")},
		{Type: command.TypeKVIncr, Key: k, Value: []byte("01")},
		{Type: command.TypeKVIncr, Key: k, Value: []byte("-0")},
		{Type: command.TypeKVIncr, Key: k, Value: []byte("99999999999999999999")},
		{Type: command.TypeKVIncr, Key: k},
		{Type: command.TypeKVIncr, Value: []byte("1")},
		{Type: command.TypeKVExpire, Key: k, Flags: 1 << 6},
		{Type: command.TypeKVExpire, Key: k, TTL: time.Second, Flags: command.FlagExpireNow},
		{Type: command.TypeKVExpire, Key: k, Flags: command.FlagExpireNX | command.FlagExpireGT},
		{Type: command.TypeKVExpire, Key: k, Flags: command.FlagExpireGT | command.FlagExpireLT},
		{Type: command.TypeKVExpire},
		{Type: command.TypeKVSetRange, Key: k, Value: []byte("x")},
		{Type: command.TypeKVSetRange, Key: k, Value: []byte("x"), Body: make([]byte, 15)},
		{Type: command.TypeKVSetRange, Key: k, Value: []byte("x"), Body: make([]byte, 16), Flags: 1 << 1},
		{Type: command.TypeKVSetRange, Value: []byte("x"), Body: make([]byte, 16)},
		{Type: command.TypeKVIncrFloat, Key: k, Value: []byte("nan")},
		{Type: command.TypeKVIncrFloat, Key: k, Value: []byte(" 1")},
		{Type: command.TypeKVIncrFloat, Key: k},
		{Type: command.TypeKVIncrFloat, Key: k, Value: []byte("1\x00")},
		{Type: command.TypeKVIncrFloat, Key: k, Value: []byte("1_0")},
		*command.KVRenameCommand(k, []byte("\x00node/n1"), command.RenamePlain, false),
		*command.KVRenameCommand(k, []byte("\x00"), command.RenameCopy, true),
		*command.KVRenameCommand(k, nil, command.RenameNX, false),
		*command.KVRenameCommand(k, make([]byte, command.MaxStoredKeyLen+1), command.RenamePlain, false),
		{Type: command.TypeKVRename, Key: k, Value: []byte("d"), Mode: 3},
		{Type: command.TypeKVRename, Key: k, Value: []byte("d"), Flags: command.FlagCopyReplace},
		{Type: command.TypeKVRename, Key: k, Value: []byte("d"), Mode: command.SetMode(command.RenameCopy), Flags: 1 << 1},
		{Type: command.TypeKVRename, Value: []byte("d")},
	}
	for i, c := range bad {
		if err := c.Validate(); !errors.Is(err, command.ErrBadCommand) {
			t.Errorf("%d: Validate(%+v) = %v, want ErrBadCommand", i, c, err)
		}
		var d command.Command
		if err := command.Decode(c.Encode(nil), &d); !errors.Is(err, command.ErrBadCommand) {
			t.Errorf("%d: Decode = %v, want ErrBadCommand", i, err)
		}
	}
}
