package fsm

import (
	"fmt"
	"testing"

	"github.com/idemgate/idemgate/command"
)

// TestDigest: the digest is Redis 8.4's: its documentation's example, and
// the empty value.
func TestDigest(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"Hello world", "b6acb9d84a38ff74"}, // redis.io/commands/digest
		{"", "2d06800538d394c2"},            // XXH3-64 of nothing
	} {
		if got := fmt.Sprintf("%016x", command.Digest([]byte(tc.value))); got != tc.want {
			t.Errorf("Digest(%q) = %s, want %s", tc.value, got, tc.want)
		}
	}
}

// TestValueConditions: SET and DELEX with IFEQ, IFNE, IFDEQ, IFDNE on the
// state machine, as Redis 8.4 documents them: IFEQ and IFDEQ never create
// a key, IFNE and IFDNE do; a condition not met changes nothing and
// answers CodeVersionMismatch (with GET, the old value); a delete whose
// key is absent is CodeNotFound whatever its condition.
func TestValueConditions(t *testing.T) {
	k := []byte("order:42")
	set := func(v string, mode command.SetMode, match string, flags byte) command.Command {
		c := command.KVSetCommand(command.KVSetRequest{Key: k, Value: []byte(v), Mode: mode, Match: []byte(match), ReturnOld: flags&command.FlagReturnOld != 0})
		if mode == command.SetIfDigestEq || mode == command.SetIfDigestNe {
			c = command.KVSetCommand(command.KVSetRequest{Key: k, Value: []byte(v), Mode: mode, Digest: command.Digest([]byte(match)), ReturnOld: flags&command.FlagReturnOld != 0})
		}
		return *c
	}
	delIf := func(mode command.SetMode, match string) command.Command {
		if mode == command.SetIfDigestEq || mode == command.SetIfDigestNe {
			return *command.KVDeleteIfCommand(k, mode, nil, command.Digest([]byte(match)))
		}
		return *command.KVDeleteIfCommand(k, mode, []byte(match), 0)
	}
	get := command.Command{Type: command.TypeKVGetDel, Key: k}
	tests := []struct {
		name  string
		steps []step
	}{
		{"IFEQ moves a state on only from the state seen, never creates", []step{
			{cmd: set("PAID", command.SetIfEq, "PROCESSING", 0), code: command.CodeVersionMismatch},
			{cmd: set("PROCESSING", command.SetPlain, "", 0), code: command.CodeCreated},
			{cmd: set("PAID", command.SetIfEq, "PENDING", command.FlagReturnOld), code: command.CodeVersionMismatch, value: "PROCESSING"},
			{cmd: set("PAID", command.SetIfEq, "PROCESSING", command.FlagReturnOld), code: command.CodeOK, value: "PROCESSING"},
			{cmd: set("REFUNDED", command.SetIfEq, "PROCESSING", 0), code: command.CodeVersionMismatch},
			{cmd: get, code: command.CodeOK, value: "PAID"},
		}},
		{"IFNE creates, and refuses only the value named", []step{
			{cmd: set("processing", command.SetIfNe, "completed", 0), code: command.CodeCreated},
			{cmd: set("processing", command.SetIfNe, "processing", 0), code: command.CodeVersionMismatch},
			{cmd: set("completed", command.SetIfNe, "pending", 0), code: command.CodeOK},
			{cmd: get, code: command.CodeOK, value: "completed"},
		}},
		{"IFEQ of the empty value", []step{
			{cmd: set("", command.SetPlain, "", 0), code: command.CodeCreated},
			{cmd: set("x", command.SetIfEq, "", 0), code: command.CodeOK},
			{cmd: set("y", command.SetIfEq, "", 0), code: command.CodeVersionMismatch},
		}},
		{"IFDEQ and IFDNE compare digests", []step{
			{cmd: set("value2", command.SetIfDigestEq, "value1", 0), code: command.CodeVersionMismatch},
			{cmd: set("value1", command.SetIfDigestNe, "value1", 0), code: command.CodeCreated},
			{cmd: set("value2", command.SetIfDigestEq, "other", 0), code: command.CodeVersionMismatch},
			{cmd: set("value2", command.SetIfDigestEq, "value1", 0), code: command.CodeOK},
			{cmd: set("value3", command.SetIfDigestNe, "value2", 0), code: command.CodeVersionMismatch},
			{cmd: set("value3", command.SetIfDigestNe, "value1", 0), code: command.CodeOK},
			{cmd: get, code: command.CodeOK, value: "value3"},
		}},
		{"DELEX releases a lock only for its holder", []step{
			{cmd: delIf(command.SetIfEq, "token-1"), code: command.CodeNotFound},
			{cmd: delIf(command.SetIfNe, "token-1"), code: command.CodeNotFound},
			{cmd: set("token-1", command.SetPlain, "", 0), code: command.CodeCreated},
			{cmd: delIf(command.SetIfEq, "token-2"), code: command.CodeVersionMismatch},
			{cmd: delIf(command.SetIfNe, "token-1"), code: command.CodeVersionMismatch},
			{cmd: delIf(command.SetIfDigestEq, "token-2"), code: command.CodeVersionMismatch},
			{cmd: delIf(command.SetIfDigestNe, "token-1"), code: command.CodeVersionMismatch},
			{cmd: delIf(command.SetIfEq, "token-1"), code: command.CodeOK},
			{cmd: get, code: command.CodeNotFound},
			{cmd: set("token-3", command.SetPlain, "", 0), code: command.CodeCreated},
			{cmd: delIf(command.SetIfDigestEq, "token-3"), code: command.CodeOK},
			{cmd: set("token-4", command.SetPlain, "", 0), code: command.CodeCreated},
			{cmd: delIf(command.SetIfNe, "token-3"), code: command.CodeOK},
			{cmd: set("token-5", command.SetPlain, "", 0), code: command.CodeCreated},
			{cmd: delIf(command.SetIfDigestNe, "token-4"), code: command.CodeOK},
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

// TestGuardedIncrement: an increment refused when its result would leave
// [min, max] changes nothing and says what the value is; the bounds are
// inclusive; a key counts from 0; bad bounds never reach the log.
func TestGuardedIncrement(t *testing.T) {
	k := []byte("balance:7")
	i64 := func(n int64) *int64 { return &n }
	incr := func(delta int64, lo, hi *int64) command.Command {
		return *command.KVIncrBoundedCommand(k, delta, lo, hi)
	}
	steps := []step{
		{cmd: incr(-100, i64(0), nil), code: command.CodeOutOfRange, value: "0"}, // absent: 0, and 0-100 < 0
		{cmd: incr(250, nil, i64(250)), code: command.CodeCreated, value: "250"},
		{cmd: incr(1, nil, i64(250)), code: command.CodeOutOfRange, value: "250"},
		{cmd: incr(-100, i64(0), nil), code: command.CodeOK, value: "150"},
		{cmd: incr(-100, i64(0), nil), code: command.CodeOK, value: "50"},
		{cmd: incr(-100, i64(0), nil), code: command.CodeOutOfRange, value: "50"},
		{cmd: incr(-50, i64(0), i64(0)), code: command.CodeOK, value: "0"},
		{cmd: incr(0, i64(1), i64(9)), code: command.CodeOutOfRange, value: "0"},
		{cmd: *command.KVIncrCommand(k, 7), code: command.CodeOK, value: "7"},
	}
	h := newHarness(t)
	for i, s := range steps {
		s.check(t, i, h.apply(s.cmd))
	}
	for i, c := range []command.Command{
		*command.KVIncrBoundedCommand(k, 1, i64(5), i64(4)),
		{Type: command.TypeKVIncr, Key: k, Value: []byte("1"), Flags: command.FlagIncrMin},
		{Type: command.TypeKVIncr, Key: k, Value: []byte("1"), Body: make([]byte, 16)},
		{Type: command.TypeKVIncr, Key: k, Value: []byte("1"), Flags: command.FlagIncrMax, Body: make([]byte, 15)},
		{Type: command.TypeKVIncr, Key: k, Value: []byte("1"), Flags: 1 << 4},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%d: bad bounds %+v validate", i, c)
		}
	}
}
