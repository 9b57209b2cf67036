package fsm

import (
	"fmt"
	"testing"
)

// TestDigest: the digest is Redis 8.4's: its documentation's example, and
// the empty value.
func TestDigest(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"Hello world", "b6acb9d84a38ff74"}, // redis.io/commands/digest
		{"", "2d06800538d394c2"},            // XXH3-64 of nothing
	} {
		if got := fmt.Sprintf("%016x", Digest([]byte(tc.value))); got != tc.want {
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
	set := func(v string, mode SetMode, match string, flags byte) Command {
		c := KVSetCommand(KVSetRequest{Key: k, Value: []byte(v), Mode: mode, Match: []byte(match), ReturnOld: flags&FlagReturnOld != 0})
		if mode == SetIfDigestEq || mode == SetIfDigestNe {
			c = KVSetCommand(KVSetRequest{Key: k, Value: []byte(v), Mode: mode, Digest: Digest([]byte(match)), ReturnOld: flags&FlagReturnOld != 0})
		}
		return *c
	}
	delIf := func(mode SetMode, match string) Command {
		if mode == SetIfDigestEq || mode == SetIfDigestNe {
			return *KVDeleteIfCommand(k, mode, nil, Digest([]byte(match)))
		}
		return *KVDeleteIfCommand(k, mode, []byte(match), 0)
	}
	get := Command{Type: TypeKVGetDel, Key: k}
	tests := []struct {
		name  string
		steps []step
	}{
		{"IFEQ moves a state on only from the state seen, never creates", []step{
			{cmd: set("PAID", SetIfEq, "PROCESSING", 0), code: CodeVersionMismatch},
			{cmd: set("PROCESSING", SetPlain, "", 0), code: CodeCreated},
			{cmd: set("PAID", SetIfEq, "PENDING", FlagReturnOld), code: CodeVersionMismatch, value: "PROCESSING"},
			{cmd: set("PAID", SetIfEq, "PROCESSING", FlagReturnOld), code: CodeOK, value: "PROCESSING"},
			{cmd: set("REFUNDED", SetIfEq, "PROCESSING", 0), code: CodeVersionMismatch},
			{cmd: get, code: CodeOK, value: "PAID"},
		}},
		{"IFNE creates, and refuses only the value named", []step{
			{cmd: set("processing", SetIfNe, "completed", 0), code: CodeCreated},
			{cmd: set("processing", SetIfNe, "processing", 0), code: CodeVersionMismatch},
			{cmd: set("completed", SetIfNe, "pending", 0), code: CodeOK},
			{cmd: get, code: CodeOK, value: "completed"},
		}},
		{"IFEQ of the empty value", []step{
			{cmd: set("", SetPlain, "", 0), code: CodeCreated},
			{cmd: set("x", SetIfEq, "", 0), code: CodeOK},
			{cmd: set("y", SetIfEq, "", 0), code: CodeVersionMismatch},
		}},
		{"IFDEQ and IFDNE compare digests", []step{
			{cmd: set("value2", SetIfDigestEq, "value1", 0), code: CodeVersionMismatch},
			{cmd: set("value1", SetIfDigestNe, "value1", 0), code: CodeCreated},
			{cmd: set("value2", SetIfDigestEq, "other", 0), code: CodeVersionMismatch},
			{cmd: set("value2", SetIfDigestEq, "value1", 0), code: CodeOK},
			{cmd: set("value3", SetIfDigestNe, "value2", 0), code: CodeVersionMismatch},
			{cmd: set("value3", SetIfDigestNe, "value1", 0), code: CodeOK},
			{cmd: get, code: CodeOK, value: "value3"},
		}},
		{"DELEX releases a lock only for its holder", []step{
			{cmd: delIf(SetIfEq, "token-1"), code: CodeNotFound},
			{cmd: delIf(SetIfNe, "token-1"), code: CodeNotFound},
			{cmd: set("token-1", SetPlain, "", 0), code: CodeCreated},
			{cmd: delIf(SetIfEq, "token-2"), code: CodeVersionMismatch},
			{cmd: delIf(SetIfNe, "token-1"), code: CodeVersionMismatch},
			{cmd: delIf(SetIfDigestEq, "token-2"), code: CodeVersionMismatch},
			{cmd: delIf(SetIfDigestNe, "token-1"), code: CodeVersionMismatch},
			{cmd: delIf(SetIfEq, "token-1"), code: CodeOK},
			{cmd: get, code: CodeNotFound},
			{cmd: set("token-3", SetPlain, "", 0), code: CodeCreated},
			{cmd: delIf(SetIfDigestEq, "token-3"), code: CodeOK},
			{cmd: set("token-4", SetPlain, "", 0), code: CodeCreated},
			{cmd: delIf(SetIfNe, "token-3"), code: CodeOK},
			{cmd: set("token-5", SetPlain, "", 0), code: CodeCreated},
			{cmd: delIf(SetIfDigestNe, "token-4"), code: CodeOK},
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
	incr := func(delta int64, lo, hi *int64) Command { return *KVIncrBoundedCommand(k, delta, lo, hi) }
	steps := []step{
		{cmd: incr(-100, i64(0), nil), code: CodeOutOfRange, value: "0"}, // absent: 0, and 0-100 < 0
		{cmd: incr(250, nil, i64(250)), code: CodeCreated, value: "250"},
		{cmd: incr(1, nil, i64(250)), code: CodeOutOfRange, value: "250"},
		{cmd: incr(-100, i64(0), nil), code: CodeOK, value: "150"},
		{cmd: incr(-100, i64(0), nil), code: CodeOK, value: "50"},
		{cmd: incr(-100, i64(0), nil), code: CodeOutOfRange, value: "50"},
		{cmd: incr(-50, i64(0), i64(0)), code: CodeOK, value: "0"},
		{cmd: incr(0, i64(1), i64(9)), code: CodeOutOfRange, value: "0"},
		{cmd: *KVIncrCommand(k, 7), code: CodeOK, value: "7"},
	}
	h := newHarness(t)
	for i, s := range steps {
		s.check(t, i, h.apply(s.cmd))
	}
	for i, c := range []Command{
		*KVIncrBoundedCommand(k, 1, i64(5), i64(4)),
		{Type: TypeKVIncr, Key: k, Value: []byte("1"), Flags: FlagIncrMin},
		{Type: TypeKVIncr, Key: k, Value: []byte("1"), Body: make([]byte, 16)},
		{Type: TypeKVIncr, Key: k, Value: []byte("1"), Flags: FlagIncrMax, Body: make([]byte, 15)},
		{Type: TypeKVIncr, Key: k, Value: []byte("1"), Flags: 1 << 4},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%d: bad bounds %+v validate", i, c)
		}
	}
}
