package fsm

import (
	"bytes"
	"fmt"
	"math"
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
	steps []*command.Command
	// advance moves the clock before the last step.
	advance time.Duration
	// last, where set, builds the last step from the state the others left.
	last func(h *harness) *command.Command
	want command.Code
}

// unreached are the codes every row declares (the state machine may
// answer them for any command) that no case reaches, with why.
var unreached = map[command.Code]string{
	command.CodeStorage: "a bbolt failure, or a stored value that does not decode: the fault and " +
		"damage tests (fsm's openchecked, raftstore's) cause those, not a table of commands",
	command.CodeBadCommand: "an entry or payload that does not decode: Decode validates it before " +
		"apply reads it, so the command table's checks answer it, whatever the row",
}

// applyCodeCases are commands that reach each code each row declares (but
// those in unreached).
func applyCodeCases() []codeCase {
	k, l, s := []byte("k"), []byte("l"), []byte("s")
	str := command.KVSetCommand(command.KVSetRequest{Key: s, Value: []byte("str")})
	list := command.ListPushCommand(l, [][]byte{[]byte("a"), []byte("b")}, true, false)
	ttlKey := command.KVSetCommand(command.KVSetRequest{Key: k, Value: []byte("1"), TTL: time.Hour})
	i64 := func(v int64) *int64 { return &v }
	rk := command.RecordKey("pay", "u", "r")
	begin := func(key []byte, digest bool) *command.Command {
		r := command.BeginRequest{Key: key, Fingerprint: []byte("fp"), TTL: time.Hour, Timeout: time.Minute}
		if digest {
			r.DigestKey, r.Window, r.RejectSuspect = []byte("digest"), time.Hour, true
		}
		return command.RecordBeginCommand(r)
	}
	complete := func(fence uint64, body string) *command.Command {
		return command.RecordCompleteCommand(command.CompleteRequest{Key: rk, Fence: fence, Status: 200, Body: []byte(body)})
	}
	ok := command.OnceKey("jobs", "o")
	fp, fp2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	onceBegin := func(p []byte) *command.Command { return command.OnceBeginCommand(ok, p, time.Minute, time.Hour) }
	lk := []byte("orders")
	acquire := func(o byte, wait time.Duration) *command.Command {
		return command.LockAcquireCommand(lk, owner(o), time.Minute, wait)
	}
	incrSet := func(v string) *command.Command {
		return command.KVSetCommand(command.KVSetRequest{Key: k, Value: []byte(v)})
	}
	// The fences below are the revisions of the commands that handed
	// them: the entry's index, one per step from 1.
	return []codeCase{
		{name: "noop", steps: []*command.Command{command.NoopCommand(nil)}, want: command.CodeOK},

		{name: "record begin", steps: []*command.Command{begin(rk, false)}, want: command.CodeCreated},
		{name: "record begin again", steps: []*command.Command{begin(rk, false), begin(rk, false)}, want: command.CodeExists},
		{name: "record begin suspect", steps: []*command.Command{begin(rk, true), begin(command.RecordKey("pay", "u", "r2"), true)}, want: command.CodeSuspect},
		{name: "record complete", steps: []*command.Command{begin(rk, false), complete(1, "a")}, want: command.CodeOK},
		{name: "record complete absent", steps: []*command.Command{complete(1, "a")}, want: command.CodeNotFound},
		{name: "record complete other fence", steps: []*command.Command{begin(rk, false), complete(9, "a")}, want: command.CodeFenceMismatch},
		{name: "record complete twice", steps: []*command.Command{begin(rk, false), complete(1, "a"), complete(1, "b")}, want: command.CodeWrongState},
		{name: "record release", steps: []*command.Command{begin(rk, false), command.RecordReleaseCommand(rk, 1)}, want: command.CodeOK},
		{name: "record release absent", steps: []*command.Command{command.RecordReleaseCommand(rk, 0)}, want: command.CodeNotFound},
		{name: "record release other fence", steps: []*command.Command{begin(rk, false), command.RecordReleaseCommand(rk, 9)}, want: command.CodeFenceMismatch},
		{name: "record release completed", steps: []*command.Command{begin(rk, false), complete(1, "a"), command.RecordReleaseCommand(rk, 1)}, want: command.CodeWrongState},

		{name: "expire", steps: []*command.Command{ttlKey, command.ExpireCommand([]ttl.Entry{{Kind: ttl.KindKV, Key: k, At: 1}})}, want: command.CodeOK},

		{name: "token issue", steps: []*command.Command{command.TokenIssueCommand(command.TokenKey("f", "t"), time.Hour)}, want: command.CodeCreated},
		{name: "token issue again", steps: []*command.Command{command.TokenIssueCommand(command.TokenKey("f", "t"), time.Hour), command.TokenIssueCommand(command.TokenKey("f", "t"), time.Hour)}, want: command.CodeExists},
		{name: "token consume", steps: []*command.Command{command.TokenIssueCommand(command.TokenKey("f", "t"), time.Hour), command.TokenConsumeCommand(command.TokenKey("f", "t"))}, want: command.CodeOK},
		{name: "token consume absent", steps: []*command.Command{command.TokenConsumeCommand(command.TokenKey("f", "t"))}, want: command.CodeNotFound},

		{name: "set creates", steps: []*command.Command{incrSet("a")}, want: command.CodeCreated},
		{name: "set replaces", steps: []*command.Command{incrSet("a"), incrSet("b")}, want: command.CodeOK},
		{name: "set nx", steps: []*command.Command{incrSet("a"), command.KVSetCommand(command.KVSetRequest{Key: k, Mode: command.SetNX})}, want: command.CodeExists},
		{name: "set xx", steps: []*command.Command{command.KVSetCommand(command.KVSetRequest{Key: k, Mode: command.SetXX})}, want: command.CodeNotFound},
		{name: "set cas", steps: []*command.Command{command.KVSetCommand(command.KVSetRequest{Key: k, Mode: command.SetCAS, Version: 7})}, want: command.CodeVersionMismatch},
		{name: "set get on a list", steps: []*command.Command{list, command.KVSetCommand(command.KVSetRequest{Key: l, ReturnOld: true})}, want: command.CodeWrongType},

		{name: "getdel", steps: []*command.Command{incrSet("a"), command.KVGetDelCommand(k, 0)}, want: command.CodeOK},
		{name: "getdel absent", steps: []*command.Command{command.KVGetDelCommand(k, 0)}, want: command.CodeNotFound},
		{name: "getdel other version", steps: []*command.Command{incrSet("a"), command.KVGetDelCommand(k, 9)}, want: command.CodeVersionMismatch},
		{name: "getdel a list", steps: []*command.Command{list, command.KVGetDelCommand(l, 0)}, want: command.CodeWrongType},
		{name: "delete", steps: []*command.Command{incrSet("a"), command.KVDeleteCommand(k)}, want: command.CodeOK},
		{name: "delete absent", steps: []*command.Command{command.KVDeleteCommand(k)}, want: command.CodeNotFound},
		{name: "delete if other", steps: []*command.Command{incrSet("a"), command.KVDeleteIfCommand(k, command.SetIfEq, []byte("b"), 0)}, want: command.CodeVersionMismatch},
		{name: "delete if on a list", steps: []*command.Command{list, command.KVDeleteIfCommand(l, command.SetIfEq, []byte("b"), 0)}, want: command.CodeWrongType},

		{name: "incr creates", steps: []*command.Command{command.KVIncrCommand(k, 1)}, want: command.CodeCreated},
		{name: "incr", steps: []*command.Command{incrSet("1"), command.KVIncrCommand(k, 1)}, want: command.CodeOK},
		{name: "incr not an integer", steps: []*command.Command{incrSet("x"), command.KVIncrCommand(k, 1)}, want: command.CodeNotInteger},
		{name: "incr overflow", steps: []*command.Command{incrSet("9223372036854775807"), command.KVIncrCommand(k, 1)}, want: command.CodeOverflow},
		{name: "incr out of range", steps: []*command.Command{command.KVIncrBoundedCommand(k, 5, nil, i64(3))}, want: command.CodeOutOfRange},
		{name: "incr a list", steps: []*command.Command{list, command.KVIncrCommand(l, 1)}, want: command.CodeWrongType},

		{name: "expire key", steps: []*command.Command{incrSet("a"), command.KVExpireCommand(k, time.Hour, 0)}, want: command.CodeOK},
		{name: "expire absent", steps: []*command.Command{command.KVExpireCommand(k, time.Hour, 0)}, want: command.CodeNotFound},
		{name: "expire nx", steps: []*command.Command{ttlKey, command.KVExpireCommand(k, time.Hour, command.FlagExpireNX)}, want: command.CodeUnchanged},
		{name: "getex a list", steps: []*command.Command{list, command.KVExpireCommand(l, time.Hour, command.FlagExpireGet)}, want: command.CodeWrongType},

		{name: "cluster id", steps: []*command.Command{command.ClusterIDCommand(command.ClusterID{1})}, want: command.CodeCreated},
		{name: "cluster id again", steps: []*command.Command{command.ClusterIDCommand(command.ClusterID{1}), command.ClusterIDCommand(command.ClusterID{2})}, want: command.CodeExists},
		{name: "member removed", steps: []*command.Command{command.MemberRemovedCommand("n2", []command.Fingerprint{{1}})}, want: command.CodeOK},

		{name: "read", steps: []*command.Command{incrSet("a"), command.KVReadCommand(k, true)}, want: command.CodeOK},
		{name: "read absent", steps: []*command.Command{command.KVReadCommand(k, true)}, want: command.CodeNotFound},
		{name: "tx", steps: []*command.Command{command.KVTxCommand(command.TxRequest{Commands: []*command.Command{incrSet("a")}, ReplyBudget: 1 << 10})}, want: command.CodeOK},
		{name: "tx watch changed", steps: []*command.Command{command.KVTxCommand(command.TxRequest{Watches: []command.Watch{{Key: k, Version: 9}},
			Commands: []*command.Command{incrSet("a")}, ReplyBudget: 1 << 10})}, want: command.CodeVersionMismatch},

		{name: "script effects", steps: []*command.Command{incrSet("1")}, last: func(h *harness) *command.Command {
			sb := sandboxOn(h)
			if _, err := sb.Apply(command.KVIncrCommand(k, 1)); err != nil {
				h.t.Fatal(err)
			}
			return sb.Effects()
		}, want: command.CodeOK},
		{name: "script effects conflict", steps: []*command.Command{incrSet("1")}, last: func(h *harness) *command.Command {
			sb := sandboxOn(h)
			if _, err := sb.Apply(command.KVIncrCommand(k, 1)); err != nil {
				h.t.Fatal(err)
			}
			h.apply(*incrSet("10"))
			return sb.Effects()
		}, want: command.CodeConflict},

		{name: "setrange creates", steps: []*command.Command{command.KVSetRangeCommand(k, 0, []byte("a"), 10)}, want: command.CodeCreated},
		{name: "setrange", steps: []*command.Command{incrSet("a"), command.KVSetRangeCommand(k, 0, []byte("b"), 10)}, want: command.CodeOK},
		{name: "setrange too long", steps: []*command.Command{command.KVSetRangeCommand(k, 5, []byte("b"), 3)}, want: command.CodeTooLong},
		{name: "setrange a list", steps: []*command.Command{list, command.KVSetRangeCommand(l, 0, []byte("b"), 10)}, want: command.CodeWrongType},
		{name: "incrfloat creates", steps: []*command.Command{command.KVIncrFloatCommand(k, []byte("1.5"))}, want: command.CodeCreated},
		{name: "incrfloat", steps: []*command.Command{incrSet("1"), command.KVIncrFloatCommand(k, []byte("1.5"))}, want: command.CodeOK},
		{name: "incrfloat not a number", steps: []*command.Command{incrSet("x"), command.KVIncrFloatCommand(k, []byte("1.5"))}, want: command.CodeNotFloat},
		{name: "incrfloat infinite", steps: []*command.Command{incrSet("1e4932"), command.KVIncrFloatCommand(k, []byte("1e4932"))}, want: command.CodeNotFinite},
		{name: "incrfloat a list", steps: []*command.Command{list, command.KVIncrFloatCommand(l, []byte("1"))}, want: command.CodeWrongType},

		{name: "rename", steps: []*command.Command{incrSet("a"), command.KVRenameCommand(k, s, command.RenamePlain, false)}, want: command.CodeOK},
		{name: "rename absent", steps: []*command.Command{command.KVRenameCommand(k, s, command.RenamePlain, false)}, want: command.CodeNotFound},
		{name: "renamenx taken", steps: []*command.Command{incrSet("a"), str, command.KVRenameCommand(k, s, command.RenameNX, false)}, want: command.CodeExists},

		{name: "once begin", steps: []*command.Command{onceBegin(fp)}, want: command.CodeCreated},
		{name: "once begin held", steps: []*command.Command{onceBegin(fp), onceBegin(fp)}, want: command.CodeExists},
		{name: "once begin other payload", steps: []*command.Command{onceBegin(fp), onceBegin(fp2)}, want: command.CodeKeyReuse},
		{name: "once begin after the lease", steps: []*command.Command{onceBegin(fp), onceBegin(fp)}, advance: time.Hour / 2, want: command.CodeTakenOver},
		{name: "once begin completed", steps: []*command.Command{onceBegin(fp), command.OnceCompleteCommand(ok, 1, []byte("r"), time.Hour), onceBegin(fp)}, want: command.CodeOK},
		{name: "once renew", steps: []*command.Command{onceBegin(fp), command.OnceRenewCommand(ok, 1, time.Minute)}, want: command.CodeOK},
		{name: "once renew other fence", steps: []*command.Command{onceBegin(fp), command.OnceRenewCommand(ok, 9, time.Minute)}, want: command.CodeFenceMismatch},
		{name: "once renew completed", steps: []*command.Command{onceBegin(fp), command.OnceCompleteCommand(ok, 1, []byte("r"), time.Hour), command.OnceRenewCommand(ok, 1, time.Minute)}, want: command.CodeWrongState},
		{name: "once complete", steps: []*command.Command{onceBegin(fp), command.OnceCompleteCommand(ok, 1, []byte("r"), time.Hour)}, want: command.CodeOK},
		{name: "once complete other fence", steps: []*command.Command{onceBegin(fp), command.OnceCompleteCommand(ok, 9, []byte("r"), time.Hour)}, want: command.CodeFenceMismatch},
		{name: "once complete other result", steps: []*command.Command{onceBegin(fp), command.OnceCompleteCommand(ok, 1, []byte("r"), time.Hour), command.OnceCompleteCommand(ok, 1, []byte("x"), time.Hour)}, want: command.CodeWrongState},
		{name: "once release", steps: []*command.Command{onceBegin(fp), command.OnceReleaseCommand(ok, 1)}, want: command.CodeOK},
		{name: "once release other fence", steps: []*command.Command{onceBegin(fp), command.OnceReleaseCommand(ok, 9)}, want: command.CodeFenceMismatch},
		{name: "once release completed", steps: []*command.Command{onceBegin(fp), command.OnceCompleteCommand(ok, 1, []byte("r"), time.Hour), command.OnceReleaseCommand(ok, 1)}, want: command.CodeWrongState},

		{name: "lock acquire", steps: []*command.Command{acquire(1, 0)}, want: command.CodeCreated},
		{name: "lock acquire held", steps: []*command.Command{acquire(1, 0), acquire(2, 0)}, want: command.CodeExists},
		{name: "lock acquire queued", steps: []*command.Command{acquire(1, 0), acquire(2, time.Minute)}, want: command.CodeQueued},
		{name: "lock acquire queue full", steps: []*command.Command{acquire(1, 0), acquire(2, time.Minute)}, last: func(h *harness) *command.Command {
			if err := h.f.db.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketLocks)
				lock, err := command.DecodeLock(b.Get(lk))
				if err != nil {
					return err
				}
				lock.Waiters = command.MaxLockWaiters
				return b.Put(lk, lock.Encode(nil))
			}); err != nil {
				h.t.Fatal(err)
			}
			return acquire(3, time.Minute)
		}, want: command.CodeQueueFull},
		{name: "lock renew", steps: []*command.Command{acquire(1, 0), command.LockRenewCommand(lk, 1, time.Minute)}, want: command.CodeOK},
		{name: "lock renew other fence", steps: []*command.Command{acquire(1, 0), command.LockRenewCommand(lk, 9, time.Minute)}, want: command.CodeFenceMismatch},
		{name: "lock release", steps: []*command.Command{acquire(1, 0), command.LockReleaseCommand(lk, 1)}, want: command.CodeOK},
		{name: "lock release other fence", steps: []*command.Command{acquire(1, 0), command.LockReleaseCommand(lk, 9)}, want: command.CodeFenceMismatch},
		{name: "lock leave", steps: []*command.Command{acquire(1, 0), acquire(2, time.Minute), command.LockLeaveCommand(lk, owner(2), 2)}, want: command.CodeOK},
		{name: "lock leave absent", steps: []*command.Command{command.LockLeaveCommand(lk, owner(2), 0)}, want: command.CodeNotFound},

		{name: "push creates", steps: []*command.Command{list}, want: command.CodeCreated},
		{name: "push", steps: []*command.Command{list, list}, want: command.CodeOK},
		{name: "pushx absent", steps: []*command.Command{command.ListPushCommand(l, [][]byte{[]byte("a")}, true, true)}, want: command.CodeNotFound},
		{name: "push past the bound", steps: []*command.Command{list, command.ListPushCommand(l, make([][]byte, command.MaxListElems-1), true, false)}, want: command.CodeTooLong},
		{name: "push onto a string", steps: []*command.Command{str, command.ListPushCommand(s, [][]byte{[]byte("a")}, true, false)}, want: command.CodeWrongType},
		{name: "pop", steps: []*command.Command{list, command.ListPopCommand([][]byte{l}, false, 0)}, want: command.CodeOK},
		{name: "pop absent", steps: []*command.Command{command.ListPopCommand([][]byte{l}, false, 0)}, want: command.CodeNotFound},
		{name: "pop a string", steps: []*command.Command{str, command.ListPopCommand([][]byte{s}, false, 0)}, want: command.CodeWrongType},
		{name: "lrem", steps: []*command.Command{list, command.ListRemCommand(l, []byte("a"), 0)}, want: command.CodeOK},
		{name: "lrem a string", steps: []*command.Command{str, command.ListRemCommand(s, []byte("a"), 0)}, want: command.CodeWrongType},
		{name: "ltrim", steps: []*command.Command{list, command.ListTrimCommand(l, 0, 0)}, want: command.CodeOK},
		{name: "ltrim a string", steps: []*command.Command{str, command.ListTrimCommand(s, 0, 0)}, want: command.CodeWrongType},
		{name: "lmove", steps: []*command.Command{list, command.ListMoveCommand(l, k, true, false)}, want: command.CodeOK},
		{name: "lmove absent", steps: []*command.Command{str, command.ListMoveCommand(l, s, true, false)}, want: command.CodeNotFound},
		{name: "lmove a string", steps: []*command.Command{str, command.ListMoveCommand(s, l, true, false)}, want: command.CodeWrongType},
		{name: "lmove onto a string", steps: []*command.Command{list, str, command.ListMoveCommand(l, s, false, true)}, want: command.CodeWrongType},
		{name: "lmove onto a full list", steps: []*command.Command{list, command.ListPushCommand(k, make([][]byte, command.MaxListElems), true, false),
			command.ListMoveCommand(l, k, false, false)}, want: command.CodeTooLong},
		{name: "lset", steps: []*command.Command{list, command.ListSetCommand(l, -1, []byte("z"))}, want: command.CodeOK},
		{name: "lset absent", steps: []*command.Command{command.ListSetCommand(l, 0, []byte("z"))}, want: command.CodeNotFound},
		{name: "lset past the end", steps: []*command.Command{list, command.ListSetCommand(l, 2, []byte("z"))}, want: command.CodeOutOfRange},
		{name: "lset a string", steps: []*command.Command{str, command.ListSetCommand(s, 0, []byte("z"))}, want: command.CodeWrongType},
		{name: "lset past the bytes' bound", steps: []*command.Command{list,
			command.ListSetCommand(l, 0, make([]byte, command.MaxListBytes))}, want: command.CodeTooLong},
		{name: "linsert", steps: []*command.Command{list, command.ListInsertCommand(l, []byte("a"), []byte("z"), true)}, want: command.CodeOK},
		{name: "linsert absent", steps: []*command.Command{command.ListInsertCommand(l, []byte("a"), []byte("z"), false)}, want: command.CodeNotFound},
		{name: "linsert no pivot", steps: []*command.Command{list, command.ListInsertCommand(l, []byte("x"), []byte("z"), false)}, want: command.CodeUnchanged},
		{name: "linsert a string", steps: []*command.Command{str, command.ListInsertCommand(s, []byte("a"), []byte("z"), false)}, want: command.CodeWrongType},
		{name: "linsert into a full list", steps: []*command.Command{command.ListPushCommand(l, make([][]byte, command.MaxListElems), true, false),
			command.ListInsertCommand(l, nil, []byte("z"), false)}, want: command.CodeTooLong},

		{name: "flush", steps: []*command.Command{incrSet("a"), command.KVFlushCommand(0, false, 0, nil)}, want: command.CodeOK},

		{name: "hset creates", steps: []*command.Command{hashCmd}, want: command.CodeCreated},
		{name: "hset", steps: []*command.Command{hashCmd, hashCmd}, want: command.CodeOK},
		{name: "hset a string", steps: []*command.Command{str, command.HashSetCommand(s, [][]byte{[]byte("f"), nil}, false)}, want: command.CodeWrongType},
		{name: "sadd past the bound", steps: []*command.Command{fullSet(), command.SetAddCommand(fs, [][]byte{[]byte("x")})}, want: command.CodeTooLong},
		{name: "hdel", steps: []*command.Command{hashCmd, command.CollDelCommand(hk, [][]byte{[]byte("f")}, false)}, want: command.CodeOK},
		{name: "srem a hash", steps: []*command.Command{hashCmd, command.CollDelCommand(hk, [][]byte{[]byte("f")}, true)}, want: command.CodeWrongType},
		{name: "hincrby creates", steps: []*command.Command{command.HashIncrCommand(hk, []byte("n"), []byte("1"), false)}, want: command.CodeCreated},
		{name: "hincrby", steps: []*command.Command{hashCmd, command.HashIncrCommand(hk, []byte("n"), []byte("1"), false)}, want: command.CodeOK},
		{name: "hincrby a word", steps: []*command.Command{hashCmd, command.HashIncrCommand(hk, []byte("f"), []byte("1"), false)}, want: command.CodeNotInteger},
		{name: "hincrby past the range", steps: []*command.Command{command.HashSetCommand(hk, [][]byte{[]byte("m"), []byte("9223372036854775807")}, false),
			command.HashIncrCommand(hk, []byte("m"), []byte("1"), false)}, want: command.CodeOverflow},
		{name: "hincrbyfloat a word", steps: []*command.Command{hashCmd, command.HashIncrCommand(hk, []byte("f"), []byte("1"), true)}, want: command.CodeNotFloat},
		{name: "hincrbyfloat past the range", steps: []*command.Command{command.HashSetCommand(hk, [][]byte{[]byte("m"), []byte("1e4932")}, false),
			command.HashIncrCommand(hk, []byte("m"), []byte("1e4932"), true)}, want: command.CodeNotFinite},
		{name: "hincrby past the bound", steps: []*command.Command{command.HashSetCommand(hk, [][]byte{[]byte("b"), make([]byte, command.MaxCollBytes-1)}, false),
			command.HashIncrCommand(hk, []byte("n"), []byte("1"), false)}, want: command.CodeTooLong},
		{name: "hincrby a set", steps: []*command.Command{setCmd, command.HashIncrCommand(sk, []byte("n"), []byte("1"), false)}, want: command.CodeWrongType},
		{name: "hget", steps: []*command.Command{hashCmd, command.CollReadCommand(hk, false, command.ReadFields, [][]byte{[]byte("f")}, 0, 0, false)}, want: command.CodeOK},
		{name: "hget absent", steps: []*command.Command{command.CollReadCommand(hk, false, command.ReadAll, nil, 0, 0, false)}, want: command.CodeNotFound},
		{name: "smembers a hash", steps: []*command.Command{hashCmd, command.CollReadCommand(hk, true, command.ReadAll, nil, 0, 0, false)}, want: command.CodeWrongType},
		{name: "spop", steps: []*command.Command{setCmd, command.SetPopCommand(sk, 1, 1)}, want: command.CodeOK},
		{name: "spop absent", steps: []*command.Command{command.SetPopCommand(sk, 1, -1)}, want: command.CodeNotFound},
		{name: "spop a hash", steps: []*command.Command{hashCmd, command.SetPopCommand(hk, 1, -1)}, want: command.CodeWrongType},
		{name: "smove", steps: []*command.Command{setCmd, command.SetMoveCommand(sk, []byte("t"), []byte("a"))}, want: command.CodeOK},
		{name: "smove onto a hash", steps: []*command.Command{setCmd, hashCmd, command.SetMoveCommand(sk, hk, []byte("a"))}, want: command.CodeWrongType},
		{name: "smove past the bound", steps: []*command.Command{setCmd, fullSet(), command.SetMoveCommand(sk, fs, []byte("a"))}, want: command.CodeTooLong},
		{name: "sunionstore", steps: []*command.Command{setCmd, command.SetStoreCommand([]byte("u"), [][]byte{sk}, command.StoreUnion)}, want: command.CodeOK},
		{name: "sunionstore of a hash", steps: []*command.Command{hashCmd, command.SetStoreCommand([]byte("u"), [][]byte{hk}, command.StoreUnion)}, want: command.CodeWrongType},
		{name: "sunionstore past the bound", steps: []*command.Command{setCmd, fullSet(), command.SetStoreCommand([]byte("u"), [][]byte{sk, fs}, command.StoreUnion)}, want: command.CodeTooLong},

		{name: "zadd creates", steps: []*command.Command{zsetCmd}, want: command.CodeCreated},
		{name: "zadd", steps: []*command.Command{zsetCmd, command.ZAddCommand(zk, []float64{3}, [][]byte{[]byte("a")}, 0)}, want: command.CodeOK},
		{name: "zadd a set", steps: []*command.Command{setCmd, command.ZAddCommand(sk, []float64{3}, [][]byte{[]byte("a")}, 0)}, want: command.CodeWrongType},
		{name: "zincrby to NaN", steps: []*command.Command{command.ZAddCommand(zk, []float64{math.Inf(1)}, [][]byte{[]byte("a")}, 0),
			command.ZAddCommand(zk, []float64{math.Inf(-1)}, [][]byte{[]byte("a")}, command.ZAddIncr)}, want: command.CodeNotFinite},
		{name: "zadd past the bound", steps: []*command.Command{fullZSet(), command.ZAddCommand(fs, []float64{1}, [][]byte{make([]byte, 100)}, 0)}, want: command.CodeTooLong},
		{name: "zrange", steps: []*command.Command{zsetCmd, command.ZRangeCommand(zk, command.ZRangeSpec{By: command.ZByScore, Min: 0, Max: 9, Limit: -1})}, want: command.CodeOK},
		{name: "zpopmin", steps: []*command.Command{zsetCmd, command.ZRemRangeCommand(zk, command.ZRangeSpec{By: command.ZByRank, Stop: 0, Limit: -1}, true)}, want: command.CodeOK},
		{name: "zmpop of keys holding no sorted set", steps: []*command.Command{command.ZPopCommand([][]byte{[]byte("zmpop:none"), []byte("zmpop:none2")}, false, 1)}, want: command.CodeNotFound},
		{name: "zremrangebyscore a set", steps: []*command.Command{setCmd, command.ZRemRangeCommand(sk, command.ZRangeSpec{By: command.ZByScore, Limit: -1}, false)}, want: command.CodeWrongType},
		{name: "zunionstore", steps: []*command.Command{zsetCmd, setCmd, command.ZCombineStoreCommand([]byte("u"), [][]byte{zk, sk}, command.ZStoreUnion, []float64{1, 2}, command.ZAggSum)}, want: command.CodeOK},
		{name: "zrangestore of a hash", steps: []*command.Command{hashCmd, command.ZRangeStoreCommand([]byte("u"), hk, command.ZRangeSpec{Limit: -1})}, want: command.CodeWrongType},
		{name: "zunionstore past the bound", steps: []*command.Command{fullZSet(), command.ZAddCommand(zk, []float64{1}, [][]byte{make([]byte, 100)}, 0),
			command.ZCombineStoreCommand([]byte("u"), [][]byte{fs, zk}, command.ZStoreUnion, []float64{1, 1}, command.ZAggSum)}, want: command.CodeTooLong},
		{name: "zrem", steps: []*command.Command{zsetCmd, command.ZRemCommand(zk, [][]byte{[]byte("a")})}, want: command.CodeOK},

		{name: "xadd creates", steps: []*command.Command{xaddCmd}, want: command.CodeCreated},
		{name: "xadd", steps: []*command.Command{xaddCmd, xadd(command.XAddAuto, command.StreamID{})}, want: command.CodeOK},
		{name: "xadd nomkstream", steps: []*command.Command{command.XAddCommand(xk, command.XAddAuto, command.StreamID{}, fv, command.StreamTrim{}, true)}, want: command.CodeNotFound},
		{name: "xadd below the top", steps: []*command.Command{xaddCmd, xadd(command.XAddExplicit, command.StreamID{Ms: 1, Seq: 1})}, want: command.CodeOutOfRange},
		{name: "xadd past the last id", steps: []*command.Command{xadd(command.XAddExplicit, command.MaxStreamID), xadd(command.XAddAuto, command.StreamID{})}, want: command.CodeOverflow},
		{name: "xadd a set", steps: []*command.Command{setCmd, command.XAddCommand(sk, command.XAddAuto, command.StreamID{}, fv, command.StreamTrim{}, false)}, want: command.CodeWrongType},
		{name: "xadd past the bound", steps: []*command.Command{fullStream(), command.XAddCommand(fs, command.XAddAuto, command.StreamID{}, [][]byte{make([]byte, 100), nil}, command.StreamTrim{}, false)}, want: command.CodeTooLong},
		{name: "xtrim", steps: []*command.Command{xaddCmd, command.XTrimCommand(xk, command.StreamTrim{Strategy: command.TrimMaxLen})}, want: command.CodeOK},
		{name: "xtrim a set", steps: []*command.Command{setCmd, command.XTrimCommand(sk, command.StreamTrim{Strategy: command.TrimMaxLen})}, want: command.CodeWrongType},
		{name: "xdel", steps: []*command.Command{xaddCmd, command.XDelCommand(xk, []command.StreamID{{Ms: 5, Seq: 1}})}, want: command.CodeOK},
		{name: "xdel a set", steps: []*command.Command{setCmd, command.XDelCommand(sk, []command.StreamID{{Ms: 5, Seq: 1}})}, want: command.CodeWrongType},
		{name: "xsetid", steps: []*command.Command{xaddCmd, command.XSetIDCommand(xk, command.StreamID{Ms: 9}, -1, command.StreamID{})}, want: command.CodeOK},
		{name: "xsetid absent", steps: []*command.Command{command.XSetIDCommand(xk, command.StreamID{Ms: 9}, -1, command.StreamID{})}, want: command.CodeNotFound},
		{name: "xsetid below the top", steps: []*command.Command{xaddCmd, command.XSetIDCommand(xk, command.StreamID{Ms: 1}, -1, command.StreamID{})}, want: command.CodeOutOfRange},
		{name: "xsetid a set", steps: []*command.Command{setCmd, command.XSetIDCommand(sk, command.StreamID{Ms: 1}, -1, command.StreamID{})}, want: command.CodeWrongType},
		{name: "xrange", steps: []*command.Command{xaddCmd, command.StreamRangeCommand(xk, command.StreamID{}, command.MaxStreamID, -1, false)}, want: command.CodeOK},
		{name: "xrange absent", steps: []*command.Command{command.StreamRangeCommand(xk, command.StreamID{}, command.MaxStreamID, -1, false)}, want: command.CodeNotFound},
		{name: "xrange a set", steps: []*command.Command{setCmd, command.StreamRangeCommand(sk, command.StreamID{}, command.MaxStreamID, -1, false)}, want: command.CodeWrongType},

		{name: "xgroup create", steps: []*command.Command{xaddCmd, groupCmd}, want: command.CodeOK},
		{name: "xgroup create busy", steps: []*command.Command{xaddCmd, groupCmd, groupCmd}, want: command.CodeExists},
		{name: "xgroup create of no stream", steps: []*command.Command{groupCmd}, want: command.CodeWrongState},
		{name: "xgroup create a set", steps: []*command.Command{setCmd, command.StreamGroupCommand(sk, nil, command.GroupCreate, command.GroupArgs{Group: []byte("g")})}, want: command.CodeWrongType},
		{name: "xreadgroup", steps: []*command.Command{xaddCmd, groupCmd, readGroupCmd}, want: command.CodeOK},
		{name: "xreadgroup nothing new", steps: []*command.Command{xaddCmd, groupCmd, readGroupCmd, readGroupCmd}, want: command.CodeNotFound},
		{name: "xpending", steps: []*command.Command{xaddCmd, groupCmd, readGroupCmd,
			command.StreamGroupReadCommand(xk, command.GroupPendingSummary, command.GroupArgs{Group: []byte("g")})}, want: command.CodeOK},
		{name: "xpending no group", steps: []*command.Command{xaddCmd, command.StreamGroupReadCommand(xk, command.GroupPendingSummary, command.GroupArgs{Group: []byte("g")})}, want: command.CodeWrongState},
		{name: "xinfo groups of a set", steps: []*command.Command{setCmd, command.StreamGroupReadCommand(sk, command.GroupInfoGroups, command.GroupArgs{})}, want: command.CodeWrongType},
	}
}

// fullStream is a stream at its bound's bytes but for 64: one entry.
func fullStream() *command.Command {
	pairs := make([][]byte, 2*(command.MaxCollBytes/(2*command.MaxFieldLen)))
	for i := range pairs {
		pairs[i] = bytes.Repeat([]byte{'f'}, command.MaxFieldLen)
		copy(pairs[i], fmt.Appendf(nil, "%d:", i))
	}
	pairs[len(pairs)-1] = pairs[len(pairs)-1][:command.MaxFieldLen-64]
	return command.XAddCommand(fs, command.XAddAuto, command.StreamID{}, pairs, command.StreamTrim{}, false)
}

// xadd adds the entry f=v to the stream xk, its id as mode says.
func xadd(mode command.XAddIDMode, id command.StreamID) *command.Command {
	return command.XAddCommand(xk, mode, id, fv, command.StreamTrim{}, false)
}

// fullZSet is a sorted set at its bound's bytes but for 64.
func fullZSet() *command.Command {
	members := make([][]byte, command.MaxCollBytes/(command.MaxFieldLen+8))
	for i := range members {
		members[i] = bytes.Repeat([]byte{'m'}, command.MaxFieldLen)
		copy(members[i], fmt.Appendf(nil, "%d:", i))
	}
	return command.ZAddCommand(fs, make([]float64, len(members)), members, 0)
}

// fullSet is a set "full" at its bound of bytes: 8192 members of 8 KiB.
func fullSet() *command.Command {
	members := make([][]byte, command.MaxCollBytes/command.MaxFieldLen)
	for i := range members {
		members[i] = bytes.Repeat([]byte{'m'}, command.MaxFieldLen)
		copy(members[i], fmt.Appendf(nil, "%d:", i))
	}
	return command.SetAddCommand(fs, members)
}

var (
	hk, sk, fs   = []byte("hash"), []byte("set"), []byte("full")
	hashCmd      = command.HashSetCommand(hk, [][]byte{[]byte("f"), []byte("word")}, false)
	setCmd       = command.SetAddCommand(sk, [][]byte{[]byte("a"), []byte("b")})
	zk           = []byte("zset")
	xk           = []byte("stream")
	fv           = [][]byte{[]byte("f"), []byte("v")}
	xaddCmd      = command.XAddCommand(xk, command.XAddExplicit, command.StreamID{Ms: 5, Seq: 1}, fv, command.StreamTrim{}, false)
	groupCmd     = command.StreamGroupCommand(xk, nil, command.GroupCreate, command.GroupArgs{Group: []byte("g")})
	readGroupCmd = command.StreamGroupCommand(xk, nil, command.GroupRead, command.GroupArgs{Group: []byte("g"), Consumer: []byte("c"), IDs: []command.StreamID{command.MaxStreamID}})
	zsetCmd      = command.ZAddCommand(zk, []float64{1, 2}, [][]byte{[]byte("a"), []byte("b")}, 0)
)

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
	reached := map[command.Type]command.Codes{}
	for _, tc := range applyCodeCases() {
		h := newHarness(t)
		h.clock = tableStamp
		if tc.prep != nil {
			tc.prep(h)
		}
		var last *command.Result
		var lastType command.Type
		check := func(c *command.Command) {
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
		typ := command.Type(i)
		if !typ.Known() {
			continue
		}
		if missed := typ.Op().Codes &^ reached[typ] &^ unreachedCodes(); missed != 0 {
			t.Errorf("%s declares codes %v that no case reaches", typ, missed)
		}
	}
}
