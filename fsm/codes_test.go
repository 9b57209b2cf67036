package fsm

import (
	"bytes"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// codeCase applies steps to a fresh state machine; its last command must
// answer want. Every command a case applies must answer a code its row
// declares (Op.Codes).
type codeCase struct {
	name  string
	prep  func(h *harness) // before the steps, beside the log
	steps []*Command
	// advance moves the clock before the last step.
	advance time.Duration
	// last, where set, builds the last step from the state the others left.
	last func(h *harness) *Command
	want Code
}

// unreached are the codes every row declares (the state machine may
// answer them for any command) that no case reaches, with why.
var unreached = map[Code]string{
	CodeStorage: "a bbolt failure, or a stored value that does not decode: the fault and " +
		"damage tests (fsm's openchecked, raftstore's) cause those, not a table of commands",
	CodeBadCommand: "an entry or payload that does not decode: Decode validates it before " +
		"apply reads it, so the command table's checks answer it, whatever the row",
}

// applyCodeCases are commands that reach each code each row declares (but
// those in unreached).
func applyCodeCases() []codeCase {
	k, l, s := []byte("k"), []byte("l"), []byte("s")
	str := KVSetCommand(KVSetRequest{Key: s, Value: []byte("str")})
	list := ListPushCommand(l, [][]byte{[]byte("a"), []byte("b")}, true, false)
	ttlKey := KVSetCommand(KVSetRequest{Key: k, Value: []byte("1"), TTL: time.Hour})
	i64 := func(v int64) *int64 { return &v }
	rk := RecordKey("pay", "u", "r")
	begin := func(key []byte, digest bool) *Command {
		r := BeginRequest{Key: key, Fingerprint: []byte("fp"), TTL: time.Hour, Timeout: time.Minute}
		if digest {
			r.DigestKey, r.Window, r.RejectSuspect = []byte("digest"), time.Hour, true
		}
		return RecordBeginCommand(r)
	}
	complete := func(fence uint64, body string) *Command {
		return RecordCompleteCommand(CompleteRequest{Key: rk, Fence: fence, Status: 200, Body: []byte(body)})
	}
	ok := OnceKey("jobs", "o")
	fp, fp2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	onceBegin := func(p []byte) *Command { return OnceBeginCommand(ok, p, time.Minute, time.Hour) }
	lk := []byte("orders")
	acquire := func(o byte, wait time.Duration) *Command { return LockAcquireCommand(lk, owner(o), time.Minute, wait) }
	incrSet := func(v string) *Command { return KVSetCommand(KVSetRequest{Key: k, Value: []byte(v)}) }
	// The fences below are the revisions of the commands that handed
	// them: the entry's index, one per step from 1.
	return []codeCase{
		{name: "noop", steps: []*Command{NoopCommand(nil)}, want: CodeOK},

		{name: "record begin", steps: []*Command{begin(rk, false)}, want: CodeCreated},
		{name: "record begin again", steps: []*Command{begin(rk, false), begin(rk, false)}, want: CodeExists},
		{name: "record begin suspect", steps: []*Command{begin(rk, true), begin(RecordKey("pay", "u", "r2"), true)}, want: CodeSuspect},
		{name: "record complete", steps: []*Command{begin(rk, false), complete(1, "a")}, want: CodeOK},
		{name: "record complete absent", steps: []*Command{complete(1, "a")}, want: CodeNotFound},
		{name: "record complete other fence", steps: []*Command{begin(rk, false), complete(9, "a")}, want: CodeFenceMismatch},
		{name: "record complete twice", steps: []*Command{begin(rk, false), complete(1, "a"), complete(1, "b")}, want: CodeWrongState},
		{name: "record release", steps: []*Command{begin(rk, false), RecordReleaseCommand(rk, 1)}, want: CodeOK},
		{name: "record release absent", steps: []*Command{RecordReleaseCommand(rk, 0)}, want: CodeNotFound},
		{name: "record release other fence", steps: []*Command{begin(rk, false), RecordReleaseCommand(rk, 9)}, want: CodeFenceMismatch},
		{name: "record release completed", steps: []*Command{begin(rk, false), complete(1, "a"), RecordReleaseCommand(rk, 1)}, want: CodeWrongState},

		{name: "expire", steps: []*Command{ttlKey, ExpireCommand([]ttl.Entry{{Kind: ttl.KindKV, Key: k, At: 1}})}, want: CodeOK},

		{name: "token issue", steps: []*Command{TokenIssueCommand(TokenKey("f", "t"), time.Hour)}, want: CodeCreated},
		{name: "token issue again", steps: []*Command{TokenIssueCommand(TokenKey("f", "t"), time.Hour), TokenIssueCommand(TokenKey("f", "t"), time.Hour)}, want: CodeExists},
		{name: "token consume", steps: []*Command{TokenIssueCommand(TokenKey("f", "t"), time.Hour), TokenConsumeCommand(TokenKey("f", "t"))}, want: CodeOK},
		{name: "token consume absent", steps: []*Command{TokenConsumeCommand(TokenKey("f", "t"))}, want: CodeNotFound},

		{name: "set creates", steps: []*Command{incrSet("a")}, want: CodeCreated},
		{name: "set replaces", steps: []*Command{incrSet("a"), incrSet("b")}, want: CodeOK},
		{name: "set nx", steps: []*Command{incrSet("a"), KVSetCommand(KVSetRequest{Key: k, Mode: SetNX})}, want: CodeExists},
		{name: "set xx", steps: []*Command{KVSetCommand(KVSetRequest{Key: k, Mode: SetXX})}, want: CodeNotFound},
		{name: "set cas", steps: []*Command{KVSetCommand(KVSetRequest{Key: k, Mode: SetCAS, Version: 7})}, want: CodeVersionMismatch},
		{name: "set get on a list", steps: []*Command{list, KVSetCommand(KVSetRequest{Key: l, ReturnOld: true})}, want: CodeWrongType},

		{name: "getdel", steps: []*Command{incrSet("a"), KVGetDelCommand(k, 0)}, want: CodeOK},
		{name: "getdel absent", steps: []*Command{KVGetDelCommand(k, 0)}, want: CodeNotFound},
		{name: "getdel other version", steps: []*Command{incrSet("a"), KVGetDelCommand(k, 9)}, want: CodeVersionMismatch},
		{name: "getdel a list", steps: []*Command{list, KVGetDelCommand(l, 0)}, want: CodeWrongType},
		{name: "delete", steps: []*Command{incrSet("a"), KVDeleteCommand(k)}, want: CodeOK},
		{name: "delete absent", steps: []*Command{KVDeleteCommand(k)}, want: CodeNotFound},
		{name: "delete if other", steps: []*Command{incrSet("a"), KVDeleteIfCommand(k, SetIfEq, []byte("b"), 0)}, want: CodeVersionMismatch},
		{name: "delete if on a list", steps: []*Command{list, KVDeleteIfCommand(l, SetIfEq, []byte("b"), 0)}, want: CodeWrongType},

		{name: "incr creates", steps: []*Command{KVIncrCommand(k, 1)}, want: CodeCreated},
		{name: "incr", steps: []*Command{incrSet("1"), KVIncrCommand(k, 1)}, want: CodeOK},
		{name: "incr not an integer", steps: []*Command{incrSet("x"), KVIncrCommand(k, 1)}, want: CodeNotInteger},
		{name: "incr overflow", steps: []*Command{incrSet("9223372036854775807"), KVIncrCommand(k, 1)}, want: CodeOverflow},
		{name: "incr out of range", steps: []*Command{KVIncrBoundedCommand(k, 5, nil, i64(3))}, want: CodeOutOfRange},
		{name: "incr a list", steps: []*Command{list, KVIncrCommand(l, 1)}, want: CodeWrongType},

		{name: "expire key", steps: []*Command{incrSet("a"), KVExpireCommand(k, time.Hour, 0)}, want: CodeOK},
		{name: "expire absent", steps: []*Command{KVExpireCommand(k, time.Hour, 0)}, want: CodeNotFound},
		{name: "expire nx", steps: []*Command{ttlKey, KVExpireCommand(k, time.Hour, FlagExpireNX)}, want: CodeUnchanged},
		{name: "getex a list", steps: []*Command{list, KVExpireCommand(l, time.Hour, FlagExpireGet)}, want: CodeWrongType},

		{name: "cluster id", steps: []*Command{ClusterIDCommand(ClusterID{1})}, want: CodeCreated},
		{name: "cluster id again", steps: []*Command{ClusterIDCommand(ClusterID{1}), ClusterIDCommand(ClusterID{2})}, want: CodeExists},
		{name: "member removed", steps: []*Command{MemberRemovedCommand("n2", []Fingerprint{{1}})}, want: CodeOK},

		{name: "read", steps: []*Command{incrSet("a"), KVReadCommand(k, true)}, want: CodeOK},
		{name: "read absent", steps: []*Command{KVReadCommand(k, true)}, want: CodeNotFound},
		{name: "tx", steps: []*Command{KVTxCommand(TxRequest{Commands: []*Command{incrSet("a")}, ReplyBudget: 1 << 10})}, want: CodeOK},
		{name: "tx watch changed", steps: []*Command{KVTxCommand(TxRequest{Watches: []Watch{{Key: k, Version: 9}},
			Commands: []*Command{incrSet("a")}, ReplyBudget: 1 << 10})}, want: CodeVersionMismatch},

		{name: "script effects", steps: []*Command{incrSet("1")}, last: func(h *harness) *Command {
			sb := sandboxOn(h)
			if _, err := sb.Apply(KVIncrCommand(k, 1)); err != nil {
				h.t.Fatal(err)
			}
			return sb.Effects()
		}, want: CodeOK},
		{name: "script effects conflict", steps: []*Command{incrSet("1")}, last: func(h *harness) *Command {
			sb := sandboxOn(h)
			if _, err := sb.Apply(KVIncrCommand(k, 1)); err != nil {
				h.t.Fatal(err)
			}
			h.apply(*incrSet("10"))
			return sb.Effects()
		}, want: CodeConflict},

		{name: "setrange creates", steps: []*Command{KVSetRangeCommand(k, 0, []byte("a"), 10)}, want: CodeCreated},
		{name: "setrange", steps: []*Command{incrSet("a"), KVSetRangeCommand(k, 0, []byte("b"), 10)}, want: CodeOK},
		{name: "setrange too long", steps: []*Command{KVSetRangeCommand(k, 5, []byte("b"), 3)}, want: CodeTooLong},
		{name: "setrange a list", steps: []*Command{list, KVSetRangeCommand(l, 0, []byte("b"), 10)}, want: CodeWrongType},
		{name: "incrfloat creates", steps: []*Command{KVIncrFloatCommand(k, []byte("1.5"))}, want: CodeCreated},
		{name: "incrfloat", steps: []*Command{incrSet("1"), KVIncrFloatCommand(k, []byte("1.5"))}, want: CodeOK},
		{name: "incrfloat not a number", steps: []*Command{incrSet("x"), KVIncrFloatCommand(k, []byte("1.5"))}, want: CodeNotFloat},
		{name: "incrfloat infinite", steps: []*Command{incrSet("1e4932"), KVIncrFloatCommand(k, []byte("1e4932"))}, want: CodeNotFinite},
		{name: "incrfloat a list", steps: []*Command{list, KVIncrFloatCommand(l, []byte("1"))}, want: CodeWrongType},

		{name: "rename", steps: []*Command{incrSet("a"), KVRenameCommand(k, s, RenamePlain, false)}, want: CodeOK},
		{name: "rename absent", steps: []*Command{KVRenameCommand(k, s, RenamePlain, false)}, want: CodeNotFound},
		{name: "renamenx taken", steps: []*Command{incrSet("a"), str, KVRenameCommand(k, s, RenameNX, false)}, want: CodeExists},

		{name: "once begin", steps: []*Command{onceBegin(fp)}, want: CodeCreated},
		{name: "once begin held", steps: []*Command{onceBegin(fp), onceBegin(fp)}, want: CodeExists},
		{name: "once begin other payload", steps: []*Command{onceBegin(fp), onceBegin(fp2)}, want: CodeKeyReuse},
		{name: "once begin after the lease", steps: []*Command{onceBegin(fp), onceBegin(fp)}, advance: time.Hour / 2, want: CodeTakenOver},
		{name: "once begin completed", steps: []*Command{onceBegin(fp), OnceCompleteCommand(ok, 1, []byte("r"), time.Hour), onceBegin(fp)}, want: CodeOK},
		{name: "once renew", steps: []*Command{onceBegin(fp), OnceRenewCommand(ok, 1, time.Minute)}, want: CodeOK},
		{name: "once renew other fence", steps: []*Command{onceBegin(fp), OnceRenewCommand(ok, 9, time.Minute)}, want: CodeFenceMismatch},
		{name: "once renew completed", steps: []*Command{onceBegin(fp), OnceCompleteCommand(ok, 1, []byte("r"), time.Hour), OnceRenewCommand(ok, 1, time.Minute)}, want: CodeWrongState},
		{name: "once complete", steps: []*Command{onceBegin(fp), OnceCompleteCommand(ok, 1, []byte("r"), time.Hour)}, want: CodeOK},
		{name: "once complete other fence", steps: []*Command{onceBegin(fp), OnceCompleteCommand(ok, 9, []byte("r"), time.Hour)}, want: CodeFenceMismatch},
		{name: "once complete other result", steps: []*Command{onceBegin(fp), OnceCompleteCommand(ok, 1, []byte("r"), time.Hour), OnceCompleteCommand(ok, 1, []byte("x"), time.Hour)}, want: CodeWrongState},
		{name: "once release", steps: []*Command{onceBegin(fp), OnceReleaseCommand(ok, 1)}, want: CodeOK},
		{name: "once release other fence", steps: []*Command{onceBegin(fp), OnceReleaseCommand(ok, 9)}, want: CodeFenceMismatch},
		{name: "once release completed", steps: []*Command{onceBegin(fp), OnceCompleteCommand(ok, 1, []byte("r"), time.Hour), OnceReleaseCommand(ok, 1)}, want: CodeWrongState},

		{name: "lock acquire", steps: []*Command{acquire(1, 0)}, want: CodeCreated},
		{name: "lock acquire held", steps: []*Command{acquire(1, 0), acquire(2, 0)}, want: CodeExists},
		{name: "lock acquire queued", steps: []*Command{acquire(1, 0), acquire(2, time.Minute)}, want: CodeQueued},
		{name: "lock acquire queue full", steps: []*Command{acquire(1, 0), acquire(2, time.Minute)}, last: func(h *harness) *Command {
			if err := h.f.db.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketLocks)
				lock, err := DecodeLock(b.Get(lk))
				if err != nil {
					return err
				}
				lock.Waiters = MaxLockWaiters
				return b.Put(lk, lock.Encode(nil))
			}); err != nil {
				h.t.Fatal(err)
			}
			return acquire(3, time.Minute)
		}, want: CodeQueueFull},
		{name: "lock renew", steps: []*Command{acquire(1, 0), LockRenewCommand(lk, 1, time.Minute)}, want: CodeOK},
		{name: "lock renew other fence", steps: []*Command{acquire(1, 0), LockRenewCommand(lk, 9, time.Minute)}, want: CodeFenceMismatch},
		{name: "lock release", steps: []*Command{acquire(1, 0), LockReleaseCommand(lk, 1)}, want: CodeOK},
		{name: "lock release other fence", steps: []*Command{acquire(1, 0), LockReleaseCommand(lk, 9)}, want: CodeFenceMismatch},
		{name: "lock leave", steps: []*Command{acquire(1, 0), acquire(2, time.Minute), LockLeaveCommand(lk, owner(2), 2)}, want: CodeOK},
		{name: "lock leave absent", steps: []*Command{LockLeaveCommand(lk, owner(2), 0)}, want: CodeNotFound},

		{name: "push creates", steps: []*Command{list}, want: CodeCreated},
		{name: "push", steps: []*Command{list, list}, want: CodeOK},
		{name: "pushx absent", steps: []*Command{ListPushCommand(l, [][]byte{[]byte("a")}, true, true)}, want: CodeNotFound},
		{name: "push past the bound", steps: []*Command{list, ListPushCommand(l, make([][]byte, MaxListElems-1), true, false)}, want: CodeTooLong},
		{name: "push onto a string", steps: []*Command{str, ListPushCommand(s, [][]byte{[]byte("a")}, true, false)}, want: CodeWrongType},
		{name: "pop", steps: []*Command{list, ListPopCommand([][]byte{l}, false, 0)}, want: CodeOK},
		{name: "pop absent", steps: []*Command{ListPopCommand([][]byte{l}, false, 0)}, want: CodeNotFound},
		{name: "pop a string", steps: []*Command{str, ListPopCommand([][]byte{s}, false, 0)}, want: CodeWrongType},
		{name: "lrem", steps: []*Command{list, ListRemCommand(l, []byte("a"), 0)}, want: CodeOK},
		{name: "lrem a string", steps: []*Command{str, ListRemCommand(s, []byte("a"), 0)}, want: CodeWrongType},
		{name: "ltrim", steps: []*Command{list, ListTrimCommand(l, 0, 0)}, want: CodeOK},
		{name: "ltrim a string", steps: []*Command{str, ListTrimCommand(s, 0, 0)}, want: CodeWrongType},

		{name: "flush", steps: []*Command{incrSet("a"), KVFlushCommand(0, false, 0, nil)}, want: CodeOK},
	}
}

func unreachedCodes() command.Codes {
	var s command.Codes
	for c := range unreached {
		s |= command.CodesOf(c)
	}
	return s
}

// TestApplyCodes holds each row's Codes to its apply function: every
// command of the cases answers a code its row declares, and every code a
// row declares is answered by a case (or is in unreached), so the
// declaration neither misses an answer nor keeps one that went.
func TestApplyCodes(t *testing.T) {
	reached := map[Type]command.Codes{}
	for _, tc := range applyCodeCases() {
		h := newHarness(t)
		h.clock = tableStamp
		if tc.prep != nil {
			tc.prep(h)
		}
		var last *Result
		var lastType Type
		check := func(c *Command) {
			r := h.apply(*c)
			if codes := c.Type.Op().Codes; codes&command.CodesOf(r.Code) == 0 {
				t.Errorf("%s: %s answered code %d (%v); its row declares %v", tc.name, c.Type, r.Code, r.Err(), codes)
			}
			reached[c.Type] |= command.CodesOf(r.Code)
			last, lastType = r, c.Type
		}
		for i, c := range tc.steps {
			if i == len(tc.steps)-1 && tc.last == nil {
				h.advance(tc.advance)
			}
			check(c)
		}
		if tc.last != nil {
			h.advance(tc.advance)
			check(tc.last(h))
		}
		if last == nil || last.Code != tc.want {
			t.Errorf("%s: last %s answered %+v, want code %d", tc.name, lastType, last, tc.want)
		}
	}
	for i := range 256 {
		typ := Type(i)
		if !typ.Known() {
			continue
		}
		if missed := typ.Op().Codes &^ reached[typ] &^ unreachedCodes(); missed != 0 {
			t.Errorf("%s declares codes %v that no case reaches", typ, missed)
		}
	}
}
