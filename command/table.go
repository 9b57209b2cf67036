package command

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/idemgate/idemgate/ttl"
)

// The command table. Every command the state machine applies is declared
// here once, in one row: its type (its byte in the log), its name, the
// fields of Command it uses, its own field rules and its properties, the
// faces' among them (Op); its constructor follows the table, and the rest
// of idemgate builds commands only through the constructors. Type.String,
// Validate, the proposer's disk guard (package raftstore) and the faces'
// tables all read it; package fsm attaches its apply functions to the
// rows by Type. A new command is a Type, a row, a constructor here, and
// an apply function in package fsm.

// Type identifies a command. Values are part of the log format: never
// renumber them; add new ones at the end.
type Type byte

// The commands.
const (
	TypeUnknown Type = iota
	TypeNoop
	TypeRecordBegin
	TypeRecordComplete
	TypeRecordRelease
	// typeMarkUnknownRetired was record_mark_unknown, which no face
	// proposed: an in-flight record's outcome becomes unknown when its
	// processing deadline passes (Record.StateAt). Its number stays taken.
	typeMarkUnknownRetired
	TypeExpire
	TypeTokenIssue
	TypeTokenConsume
	TypeKVSet
	TypeKVGetDel
	TypeKVDelete
	TypeKVIncr
	TypeKVExpire
	TypeClusterID
	TypeMemberRemoved
	TypeKVRead
	TypeKVTx
	TypeScriptEffects
	TypeKVSetRange
	TypeKVIncrFloat
	TypeKVRename
	TypeOnceBegin
	TypeOnceRenew
	TypeOnceComplete
	TypeOnceRelease
	TypeLockAcquire
	TypeLockRenew
	TypeLockRelease
	TypeLockLeave
	TypeListPush
	TypeListPop
	TypeListRem
	TypeListTrim
	TypeKVFlush
	TypeListMove
	TypeListSet
	TypeListInsert
	TypeCollPut
	TypeCollDel
	TypeHashIncr
	TypeCollRead
	TypeSetPop
	TypeSetMove
	TypeSetStore
	TypeZAdd
	TypeZRemRange
	TypeZStore
	TypeStreamAdd
	TypeStreamTrim
	TypeStreamDel
	TypeStreamSetID
	TypeStreamRead
	TypeStreamGroup
	TypeStreamGroupRead
	typeEnd
)

// field is a set of Command's fields: those a command uses.
type field uint16

// The fields a command may use beside the envelope (request id, stamp).
const (
	fKey field = 1 << iota
	fValue
	fTTL
	fTimeout
	fFence
	fVersion
	fMode
	fFlags
	fStatus
	fHeaders
	fBody
	fEntries
	fDigestKey
	fWindow
)

// spec declares one command type: what the log, the proposer and every
// face need to know of it. How it is applied is the state machine's
// (package fsm attaches its apply functions to the rows by Type).
type spec struct {
	name string
	// uses is the fields the command reads. Its constructor sets no
	// other, and apply ignores every other (TestCommandTableUses).
	uses field
	// key: the command names a key, which must not be empty.
	key bool
	// diskLow: proposed even while the disk guard refuses writes
	// (package raftstore): it frees space, or it is a few bytes, once,
	// that the cluster's safety needs.
	diskLow bool
	// check is the command's own field rules, beyond the bounds every
	// command meets (Validate); nil: none.
	check func(c *Command) error
	// Op is what the faces derive their own tables from.
	Op
}

// Op is what every face needs to know of a store operation, declared on
// its command's row: the Redis face's command table, its script
// allow-list and what MULTI may queue are derived from it.
type Op struct {
	// Write: the command changes state (a read in the log does not).
	Write bool
	// Script: a script may make it: a write the sandbox applies (package
	// fsm gives exactly those rows a sandbox apply), or a read, which the
	// sandbox answers from what the script sees.
	Script bool
	// Tx: a transaction (tx.go) may hold it: a command of the KV keyspace.
	Tx bool
	// Role is the least role a caller needs.
	Role Role
	// Codes is every outcome the state machine may answer for it: each
	// row holds always (CodeStorage, CodeBadCommand) and what its apply
	// answers; package fsm's TestApplyCodes holds the apply functions to
	// them. A face answers each one (an error reply or problem, or a
	// reply of its own).
	Codes Codes
}

// Role is the least grant a caller of an operation needs.
type Role byte

// The roles, each allowed what the ones before it are.
const (
	// RoleNode: no face calls it; the node proposes it itself (a tick,
	// an expiry, the cluster's own facts).
	RoleNode Role = iota
	RoleRead
	RoleWrite
	RoleAdmin
)

// commands is the table, by Type. A row's comment says what a field means
// where its name does not say it all.
var commands = [typeEnd]spec{
	TypeUnknown: {name: "unknown"},
	// Value: an opaque payload; it changes nothing but the clock. Proposed
	// while the disk is low: a few bytes, and a linearizable read of a key
	// past its expiry by the wall clock needs the cluster's clock moved on
	// (raftstore's read.go).
	TypeNoop: {name: "noop", uses: fValue, diskLow: true, Op: Op{Write: true, Role: RoleNode, Codes: always | CodesOf(CodeOK)}},
	// Value: the request's fingerprint; Timeout: the processing timeout;
	// DigestKey (empty: none) and Window: suspect detection (suspect.go).
	TypeRecordBegin: {name: "record_begin", uses: fKey | fValue | fTTL | fTimeout | fFlags | fDigestKey | fWindow, key: true,
		Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeCreated, CodeExists, CodeSuspect)}},
	TypeRecordComplete: {name: "record_complete", uses: fKey | fFence | fStatus | fFlags | fHeaders | fBody, key: true, check: checkComplete,
		Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeFenceMismatch, CodeWrongState)}},
	// Fence 0: an operator's release of whatever owns the record.
	TypeRecordRelease: {name: "record_release", uses: fKey | fFence, key: true,
		Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeFenceMismatch, CodeWrongState)}},
	// Entries: what a sweeper found due.
	TypeExpire: {name: "expire", uses: fEntries, diskLow: true, check: checkExpire,
		Op: Op{Write: true, Role: RoleNode, Codes: always | CodesOf(CodeOK)}},
	// Key: TokenKey(scope, token).
	TypeTokenIssue:   {name: "token_issue", uses: fKey | fTTL, key: true, Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeCreated, CodeExists)}},
	TypeTokenConsume: {name: "token_consume", uses: fKey, key: true, Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound)}},
	// Version: the version a SetCAS expects (0: the key must not exist).
	TypeKVSet: {name: "kv_set", uses: fKey | fValue | fTTL | fMode | fVersion | fFlags | fBody, key: true, check: checkKVSet,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeCreated, CodeExists, CodeNotFound, CodeVersionMismatch, CodeWrongType)}},
	// Version (0: any): compare-and-delete, for both.
	TypeKVGetDel: {name: "kv_getdel", uses: fKey | fVersion, key: true,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeVersionMismatch, CodeWrongType)}},
	TypeKVDelete: {name: "kv_delete", uses: fKey | fVersion | fMode | fBody, key: true, check: checkKVDelete,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeVersionMismatch, CodeWrongType)}},
	// Value: the increment, a signed decimal integer (Redis INCRBY).
	// Flags and Body: the bounds of a guarded increment (FlagIncrMin,
	// FlagIncrMax; Body the two, 8 big-endian bytes each).
	TypeKVIncr: {name: "kv_incr", uses: fKey | fValue | fFlags | fBody, key: true, check: checkKVIncr,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeCreated, CodeNotInteger, CodeOverflow, CodeOutOfRange, CodeWrongType)}},
	// TTL: the new lifetime (zero without FlagExpireNow: none; Redis
	// EXPIRE, PERSIST).
	TypeKVExpire: {name: "kv_expire", uses: fKey | fTTL | fFlags, key: true, check: checkKVExpire,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeUnchanged, CodeWrongType)}},
	// Value: the 16-byte id; applied only while the state holds none
	// (cluster.go).
	TypeClusterID: {name: "cluster_id", uses: fValue, diskLow: true, check: checkClusterID,
		Op: Op{Write: true, Role: RoleNode, Codes: always | CodesOf(CodeCreated, CodeExists)}},
	// Key: the node id; Value: its certificates' fingerprints, 32 bytes
	// each (cluster.go).
	TypeMemberRemoved: {name: "member_removed", uses: fKey | fValue, key: true, diskLow: true, check: checkMemberRemoved,
		Op: Op{Write: true, Role: RoleNode, Codes: always | CodesOf(CodeOK)}},
	// A read in the log, a transaction's (kv_tx.go); Flags: FlagReadValue.
	TypeKVRead: {name: "kv_read", uses: fKey | fFlags, key: true, check: checkKVRead,
		Op: Op{Script: true, Tx: true, Role: RoleRead, Codes: always | CodesOf(CodeOK, CodeNotFound)}},
	// Value: the watches and the commands (kv_tx.go); Version: the bytes
	// of values its results may carry.
	TypeKVTx: {name: "kv_tx", uses: fValue | fVersion, check: checkKVTx, Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeVersionMismatch)}},
	// Body: a script's effects (script.go): what it read, at which
	// versions, and the KV commands it made; applied whole only while
	// every key it read is as it read it (CodeConflict if not).
	TypeScriptEffects: {name: "script_effects", uses: fBody, Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeConflict)}},
	// Value: the bytes to write; Body: the offset and the longest the
	// value may become, 8 big-endian bytes each; Flags: FlagRangeAppend
	// (Redis SETRANGE, APPEND; kv_string.go).
	TypeKVSetRange: {name: "kv_setrange", uses: fKey | fValue | fFlags | fBody, key: true, check: checkKVSetRange,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeCreated, CodeTooLong, CodeWrongType)}},
	// Value: the increment, as strtold reads it (Redis INCRBYFLOAT).
	TypeKVIncrFloat: {name: "kv_incrfloat", uses: fKey | fValue, key: true, check: checkKVIncrFloat,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeCreated, CodeNotFloat, CodeNotFinite, CodeWrongType)}},
	// Key: the source; Value: the destination; Mode: a RenameMode; Flags:
	// FlagCopyReplace (Redis RENAME, RENAMENX, COPY; kv_rename.go). Not a
	// script's: a script's effects name the keys they write by Key alone.
	TypeKVRename: {name: "kv_rename", uses: fKey | fValue | fMode | fFlags, key: true, check: checkKVRename,
		Op: Op{Write: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeExists)}},
	// Key: OnceKey(scope, key). Value: the payload's fingerprint
	// (OnceFingerprint); Timeout: the lease; TTL: the scope's retention.
	TypeOnceBegin: {name: "once_begin", uses: fKey | fValue | fTTL | fTimeout, key: true, check: checkOnceBegin,
		Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeCreated, CodeTakenOver, CodeOK, CodeExists, CodeKeyReuse)}},
	// Timeout: the new lease, from the renew.
	TypeOnceRenew: {name: "once_renew", uses: fKey | fFence | fTimeout, key: true, check: checkOnceRenew,
		Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeFenceMismatch, CodeWrongState)}},
	// Body: the result; TTL: the scope's retention, from the complete.
	TypeOnceComplete: {name: "once_complete", uses: fKey | fFence | fBody | fTTL, key: true, check: checkOnceComplete,
		Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeFenceMismatch, CodeWrongState)}},
	TypeOnceRelease: {name: "once_release", uses: fKey | fFence, key: true, check: checkFence,
		Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeFenceMismatch, CodeWrongState)}},
	// Key: the lock's name (CheckLockName). Value: the owner token the
	// waiting request chose; Timeout: the lease; TTL: how long to wait
	// in the queue (0: not at all).
	TypeLockAcquire: {name: "lock_acquire", uses: fKey | fValue | fTTL | fTimeout, key: true, check: checkLockAcquire,
		Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeCreated, CodeExists, CodeQueued, CodeQueueFull)}},
	// Timeout: the new lease, from the renew.
	TypeLockRenew: {name: "lock_renew", uses: fKey | fFence | fTimeout, key: true, check: checkLockRenew,
		Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeFenceMismatch)}},
	TypeLockRelease: {name: "lock_release", uses: fKey | fFence, key: true, check: checkLockFence,
		Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeFenceMismatch)}},
	// Value: the waiter's owner token; Version: its ticket (0: unknown,
	// only a grant it holds is given back).
	TypeLockLeave: {name: "lock_leave", uses: fKey | fValue | fVersion, key: true, check: checkLockLeave,
		Op: Op{Write: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound)}},
	// The list commands (list.go). Value: the elements, a list's
	// encoding; Flags: FlagListRight, FlagListExisting.
	TypeListPush: {name: "list_push", uses: fKey | fValue | fFlags, key: true, check: checkListPush,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeCreated, CodeNotFound, CodeTooLong, CodeWrongType)}},
	// Value: the further keys (BLPOP's), a list's encoding; Body: the
	// count, with FlagListCount.
	TypeListPop: {name: "list_pop", uses: fKey | fValue | fFlags | fBody, key: true, check: checkListPop,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeWrongType)}},
	// Value: the element; Body: the signed count.
	TypeListRem: {name: "list_rem", uses: fKey | fValue | fBody, key: true, check: checkListRem,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeWrongType)}},
	// Body: start and stop, signed.
	TypeListTrim: {name: "list_trim", uses: fKey | fBody, key: true, check: checkListTrim,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeWrongType)}},
	// Mode: the keyspace; Flags: FlagFlushAll; Version: the flush's bound
	// (0: this entry's revision); Value: the stored key it resumes at
	// (Redis FLUSHDB, FLUSHALL; kv_flush.go). Proposed while the disk is
	// low: it frees space.
	TypeKVFlush: {name: "kv_flush", uses: fMode | fFlags | fVersion | fValue, diskLow: true, check: checkKVFlush,
		Op: Op{Write: true, Role: RoleAdmin, Codes: always | CodesOf(CodeOK)}},
	// More list commands (list.go). Value: the destination (stored, of
	// any keyspace); Flags: FlagListRight (the pop), FlagListToRight (the
	// push).
	TypeListMove: {name: "list_move", uses: fKey | fValue | fFlags, key: true, check: checkListMove,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeTooLong, CodeWrongType)}},
	// Value: the element; Body: the index, signed.
	TypeListSet: {name: "list_set", uses: fKey | fValue | fBody, key: true, check: checkListSet,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeOutOfRange, CodeTooLong, CodeWrongType)}},
	// Value: the element; Body: the pivot; Flags: FlagListRight (after
	// the pivot).
	TypeListInsert: {name: "list_insert", uses: fKey | fValue | fFlags | fBody, key: true, check: checkListInsert,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeUnchanged, CodeTooLong, CodeWrongType)}},
	// The hash and set commands (coll.go). Value: the elements, a list's
	// encoding (a hash's fields and values alternating); Flags:
	// FlagCollSet, FlagCollNX.
	TypeCollPut: {name: "coll_put", uses: fKey | fValue | fFlags, key: true, check: checkCollPut,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeCreated, CodeTooLong, CodeWrongType)}},
	// Value: the fields, a list's encoding.
	TypeCollDel: {name: "coll_del", uses: fKey | fValue | fFlags, key: true, check: checkCollDel,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeWrongType)}},
	// Value: the field; Body: the increment; Flags: FlagCollFloat.
	TypeHashIncr: {name: "hash_incr", uses: fKey | fValue | fFlags | fBody, key: true, check: checkHashIncr,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeCreated, CodeNotInteger, CodeOverflow, CodeNotFloat, CodeNotFinite, CodeTooLong, CodeWrongType)}},
	// A read (in the log inside a transaction). Mode: a CollReadMode;
	// Value: further keys (a set algebra's), a list's encoding; Body: the
	// mode's arguments; Flags: FlagCollSet, FlagCollCount.
	TypeCollRead: {name: "coll_read", uses: fKey | fValue | fMode | fFlags | fBody, key: true, check: checkCollRead,
		Op: Op{Script: true, Tx: true, Role: RoleRead, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeWrongType)}},
	// Body: the seed and the count, 8 bytes each; Flags: FlagCollCount.
	TypeSetPop: {name: "set_pop", uses: fKey | fFlags | fBody, key: true, check: checkSetPop,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeWrongType)}},
	// Value: the destination, a list's encoding of one key; Body: the
	// member.
	TypeSetMove: {name: "set_move", uses: fKey | fValue | fBody, key: true, check: checkSetMove,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeTooLong, CodeWrongType)}},
	// Key: the destination; Value: the sources, a list's encoding; Mode:
	// a SetStoreMode.
	TypeSetStore: {name: "set_store", uses: fKey | fValue | fMode, key: true, check: checkSetStore,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeTooLong, CodeWrongType)}},
	// The sorted set's write (zset.go). Value: scores and members
	// alternating; Mode: its ZADD flags.
	TypeZAdd: {name: "zset_add", uses: fKey | fValue | fMode, key: true, check: checkZAdd,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeCreated, CodeNotFinite, CodeTooLong, CodeWrongType)}},
	// Body: a ZRangeSpec; Flags: FlagCollCount (answer the members),
	// FlagZKeyed (Value: the further keys, a list's encoding).
	TypeZRemRange: {name: "zset_rem_range", uses: fKey | fValue | fFlags | fBody, key: true, check: checkZRemRange,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeWrongType)}},
	// Key: the destination; Value: the sources, a list's encoding; Mode:
	// a ZStoreMode; Body: a ZRangeSpec, or an aggregate and the weights.
	TypeZStore: {name: "zset_store", uses: fKey | fValue | fMode | fBody, key: true, check: checkZStore,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeTooLong, CodeWrongType)}},
	// The stream's commands (stream.go). Value: the entry's fields and
	// values; Body: the id's mode and id, then a StreamTrim; Flags:
	// FlagStreamNoMk.
	TypeStreamAdd: {name: "stream_add", uses: fKey | fValue | fFlags | fBody, key: true, check: checkStreamAdd,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeCreated, CodeNotFound, CodeOutOfRange, CodeOverflow, CodeTooLong, CodeWrongType)}},
	// Body: a StreamTrim.
	TypeStreamTrim: {name: "stream_trim", uses: fKey | fBody, key: true, check: checkStreamTrim,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeWrongType)}},
	// Body: the ids, 16 bytes each.
	TypeStreamDel: {name: "stream_del", uses: fKey | fBody, key: true, check: checkStreamDel,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeWrongType)}},
	// Body: the last id, entries added, highest deleted id; Flags: which
	// of the two are given.
	TypeStreamSetID: {name: "stream_setid", uses: fKey | fFlags | fBody, key: true, check: checkStreamSetID,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeOutOfRange, CodeWrongType)}},
	// Mode: a StreamReadMode; Body: its arguments; Flags: FlagStreamRev.
	TypeStreamRead: {name: "stream_read", uses: fKey | fMode | fFlags | fBody, key: true, check: checkStreamRead,
		Op: Op{Script: true, Tx: true, Role: RoleRead, Codes: always | CodesOf(CodeOK, CodeNotFound, CodeWrongType)}},
	// A stream's consumer groups (stream_group.go). Mode: a GroupOp;
	// Body: its GroupArgs; Value: XREADGROUP's further keys, a list's
	// encoding.
	TypeStreamGroup: {name: "stream_group", uses: fKey | fValue | fMode | fBody, key: true, check: checkStreamGroup,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite, Codes: always | CodesOf(CodeOK, CodeExists, CodeNotFound, CodeWrongState, CodeWrongType)}},
	// A read of them (in the log inside a transaction).
	TypeStreamGroupRead: {name: "stream_group_read", uses: fKey | fMode | fBody, key: true, check: checkStreamGroupRead,
		Op: Op{Script: true, Tx: true, Role: RoleRead, Codes: always | CodesOf(CodeOK, CodeWrongState, CodeWrongType)}},
}

// spec returns t's row, or nil for a type this build does not apply.
func (t Type) spec() *spec {
	if t >= typeEnd || t == TypeUnknown || commands[t].name == "" {
		return nil
	}
	return &commands[t]
}

// Known reports whether this build applies commands of type t.
func (t Type) Known() bool { return t.spec() != nil }

// Op is what the faces need to know of t (see Op); the zero Op for a
// type this build does not apply.
func (t Type) Op() Op {
	if s := t.spec(); s != nil {
		return s.Op
	}
	return Op{}
}

func (t Type) String() string {
	if t < typeEnd && commands[t].name != "" {
		return commands[t].name
	}
	return fmt.Sprintf("type(%d)", byte(t))
}

// AllowedWhenDiskLow reports whether a command of type t is proposed while
// the disk guard refuses writes: expiring frees space; the cluster's own
// facts are a few bytes, once, and membership safety needs them.
func (t Type) AllowedWhenDiskLow() bool {
	s := t.spec()
	return s != nil && s.diskLow
}

// MaxStoredKeyLen bounds a stored key of every keyspace: a record key (scope,
// tenant and the client's key), a token key, a KV key.
const MaxStoredKeyLen = 1024

// MaxTTL bounds every lifetime and timeout a command carries: an expiry is
// the state machine's clock plus it, and must never overflow.
const MaxTTL = 100 * 365 * 24 * time.Hour

// Validate checks the field rules that do not depend on state: the bounds
// every command must satisfy, then its own (the table's check). The
// proposer calls it before a command reaches the log (so bad input is
// refused with a clear error and costs no Raft round trip), and Decode
// again on every replica.
func (c *Command) Validate() error {
	bad := func(what string) error { return fmt.Errorf("%w: %s: %s", ErrBadCommand, c.Type, what) }
	s := c.Type.spec()
	if s == nil {
		return bad("unknown command type")
	}
	if c.TTL < 0 || c.Timeout < 0 || c.Window < 0 {
		return bad("negative duration")
	}
	if c.TTL > MaxTTL || c.Timeout > MaxTTL || c.Window > MaxTTL {
		return bad(fmt.Sprintf("a lifetime over %s", MaxTTL))
	}
	if len(c.Key) > MaxStoredKeyLen {
		return bad(fmt.Sprintf("key of %d bytes, over %d", len(c.Key), MaxStoredKeyLen))
	}
	if s.key && len(c.Key) == 0 {
		return bad("empty key")
	}
	if s.check != nil {
		if err := s.check(c); err != nil {
			return bad(err.Error())
		}
	}
	return nil
}

// The commands' own field rules.

func checkComplete(c *Command) error {
	if c.Status < 100 || c.Status > 999 {
		return errors.New("status out of range")
	}
	return checkFence(c)
}

func checkFence(c *Command) error {
	if c.Fence == 0 {
		return errors.New("missing fencing token")
	}
	return nil
}

func checkOnceBegin(c *Command) error {
	switch {
	case len(c.Value) != 32:
		return errors.New("a payload fingerprint is 32 bytes")
	case c.Timeout <= 0:
		return errors.New("a lease must be positive")
	case c.TTL <= 0:
		return errors.New("a retention must be positive")
	}
	return nil
}

func checkOnceRenew(c *Command) error {
	if c.Timeout <= 0 {
		return errors.New("a lease must be positive")
	}
	return checkFence(c)
}

func checkOnceComplete(c *Command) error {
	if c.TTL <= 0 {
		return errors.New("a retention must be positive")
	}
	return checkFence(c)
}

func checkExpire(c *Command) error {
	for _, e := range c.Entries {
		if !e.Kind.Valid() {
			return errors.New("unknown expiry kind")
		}
	}
	return nil
}

func checkKVSet(c *Command) error {
	switch {
	case c.Mode > SetIfDigestNe:
		return errors.New("unknown set mode")
	case checkCondition(c) != nil:
		return checkCondition(c)
	case c.Flags&^(FlagKeepTTL|FlagReturnOld) != 0:
		return errors.New("unknown set flags")
	case c.Flags&FlagKeepTTL != 0 && c.TTL != 0:
		return errors.New("a lifetime and keep-lifetime together")
	}
	return nil
}

// checkCondition checks a value condition's comparand (Body): none
// without one, 8 bytes for a digest.
func checkCondition(c *Command) error {
	switch c.Mode {
	case SetIfEq, SetIfNe:
	case SetIfDigestEq, SetIfDigestNe:
		if len(c.Body) != 8 {
			return errors.New("a digest condition needs an 8-byte digest")
		}
	default:
		if len(c.Body) != 0 {
			return errors.New("a comparand without a value condition")
		}
	}
	return nil
}

// checkKVDelete: a delete's condition is a version, or a value condition
// (SetIfEq...), not both.
func checkKVDelete(c *Command) error {
	switch {
	case c.Mode != SetPlain && (c.Mode < SetIfEq || c.Mode > SetIfDigestNe):
		return errors.New("a delete's condition is a value condition")
	case c.Mode != SetPlain && c.Version != 0:
		return errors.New("a version and a value condition together")
	}
	return checkCondition(c)
}

func checkKVIncr(c *Command) error {
	if _, ok := ParseInt(c.Value); !ok {
		return errors.New("the increment is not a decimal integer")
	}
	switch lo, hi, ok := IncrBounds(c); {
	case c.Flags&^(FlagIncrMin|FlagIncrMax) != 0:
		return errors.New("unknown increment flags")
	case !ok:
		return errors.New("an increment's bounds are 16 bytes, and only with a bound flag")
	case lo > hi:
		return errors.New("an increment's min is above its max")
	}
	return nil
}

func checkKVExpire(c *Command) error {
	switch {
	case c.Flags&^expireFlags != 0:
		return errors.New("unknown expire flags")
	case c.Flags&FlagExpireNow != 0 && c.TTL != 0:
		return errors.New("a lifetime and expire-now together")
	case c.Flags&FlagExpireNX != 0 && c.Flags&(FlagExpireXX|FlagExpireGT|FlagExpireLT) != 0,
		c.Flags&FlagExpireGT != 0 && c.Flags&FlagExpireLT != 0:
		return errors.New("conflicting expire conditions")
	}
	return nil
}

func checkClusterID(c *Command) error {
	if len(c.Value) != len(ClusterID{}) || ClusterID(c.Value).IsZero() {
		return errors.New("a cluster id is 16 bytes, not all zero")
	}
	return nil
}

func checkMemberRemoved(c *Command) error {
	if len(c.Value)%len(Fingerprint{}) != 0 {
		return errors.New("fingerprints are 32 bytes each")
	}
	return nil
}

// The constructors, one per command, in the table's order. Each sets only
// the fields its row uses; the proposer sets the request id and the stamp.
// Byte slices are not copied: the command aliases them until it is encoded.

// NoopCommand changes nothing but the state machine's clock (a leader's
// tick); payload is opaque.
func NoopCommand(payload []byte) *Command { return &Command{Type: TypeNoop, Value: payload} }

// BeginRequest starts an idempotency record.
type BeginRequest struct {
	Key            []byte // RecordKey(scope, tenant, key)
	Fingerprint    []byte
	TTL            time.Duration
	Timeout        time.Duration // processing timeout; 0: none
	ReleaseUnknown bool          // take over a record whose outcome is unknown
	// DigestKey (fsm.DigestKey) turns on suspect detection for this begin:
	// a different record key that began with it within Window is reported
	// in Result.Suspect, or refused (CodeSuspect) with RejectSuspect.
	DigestKey     []byte
	Window        time.Duration
	RejectSuspect bool
}

// RecordBeginCommand is SETNX for an idempotency record: it makes the
// caller the owner (CodeCreated, the fencing token in Result.Fence) or
// answers the existing record (CodeExists, Result.Record); CodeSuspect when
// it refused a suspected duplicate.
func RecordBeginCommand(r BeginRequest) *Command {
	c := &Command{Type: TypeRecordBegin, Key: r.Key, Value: r.Fingerprint, TTL: r.TTL, Timeout: r.Timeout,
		DigestKey: r.DigestKey, Window: r.Window}
	if r.ReleaseUnknown {
		c.Flags |= FlagReleaseUnknown
	}
	if r.RejectSuspect {
		c.Flags |= FlagRejectSuspect
	}
	return c
}

// CompleteRequest stores an owner's response.
type CompleteRequest struct {
	Key         []byte
	Fence       uint64
	Status      int
	Headers     []Header
	Body        []byte
	BodyDropped bool // the body was too large to store: replays cannot be served
}

// RecordCompleteCommand stores the owner's response; CodeFenceMismatch when
// Fence no longer owns the record.
func RecordCompleteCommand(r CompleteRequest) *Command {
	c := &Command{Type: TypeRecordComplete, Key: r.Key, Fence: r.Fence, Status: r.Status, Headers: r.Headers, Body: r.Body}
	if r.BodyDropped {
		c.Flags |= FlagBodyDropped
	}
	return c
}

// RecordReleaseCommand deletes a record so a retry can run. Fence 0
// releases whatever owns it (an operator's release).
func RecordReleaseCommand(key []byte, fence uint64) *Command {
	return &Command{Type: TypeRecordRelease, Key: key, Fence: fence}
}

// ExpireCommand removes the entries a sweeper found due (expire.go).
func ExpireCommand(entries []ttl.Entry) *Command { return &Command{Type: TypeExpire, Entries: entries} }

// TokenIssueCommand stores a new form token under key (TokenKey) for
// lifetime; CodeExists if it is already there.
func TokenIssueCommand(key []byte, lifetime time.Duration) *Command {
	return &Command{Type: TypeTokenIssue, Key: key, TTL: lifetime}
}

// TokenConsumeCommand deletes a live token: exactly one consume succeeds,
// every other is CodeNotFound.
func TokenConsumeCommand(key []byte) *Command { return &Command{Type: TypeTokenConsume, Key: key} }

// KVSetRequest is a KV write with Redis's SET options.
type KVSetRequest struct {
	Key, Value []byte
	TTL        time.Duration // 0: never expires (unless KeepTTL)
	Mode       SetMode       // SetPlain, SetNX, SetXX, SetCAS on Version, or a value condition
	Version    uint64
	KeepTTL    bool // keep the key's lifetime (TTL must be 0)
	ReturnOld  bool // Result.Value is the value before (CodeOK, CodeExists, CodeVersionMismatch: there was one)
	// Match is what SetIfEq and SetIfNe compare the value with; Digest
	// what SetIfDigestEq and SetIfDigestNe compare its digest with.
	Match  []byte
	Digest uint64
}

// KVSetCommand writes a KV key; its refusals are codes: CodeExists (NX,
// with the current value), CodeNotFound (XX), CodeVersionMismatch (CAS).
func KVSetCommand(r KVSetRequest) *Command {
	c := &Command{Type: TypeKVSet, Key: r.Key, Value: r.Value, TTL: r.TTL, Mode: r.Mode, Version: r.Version,
		Body: comparand(r.Mode, r.Match, r.Digest)}
	if r.KeepTTL {
		c.Flags |= FlagKeepTTL
	}
	if r.ReturnOld {
		c.Flags |= FlagReturnOld
	}
	return c
}

// KVGetDelCommand removes a key and answers the value it had
// (CodeNotFound). A non-zero version makes it compare-and-delete: the key
// is removed only at that version (CodeVersionMismatch, with the current
// version, if not).
func KVGetDelCommand(key []byte, version uint64) *Command {
	return &Command{Type: TypeKVGetDel, Key: key, Version: version}
}

// KVDeleteCommand removes a key (CodeNotFound if there is none).
func KVDeleteCommand(key []byte) *Command { return &Command{Type: TypeKVDelete, Key: key} }

// KVDeleteIfCommand removes a key only while its value meets a value
// condition (mode SetIfEq, SetIfNe, SetIfDigestEq or SetIfDigestNe, with
// match or digest as KVSetRequest has them): Redis 8.4's DELEX.
// CodeNotFound for an absent key, CodeVersionMismatch for one whose value
// does not meet it.
func KVDeleteIfCommand(key []byte, mode SetMode, match []byte, digest uint64) *Command {
	return &Command{Type: TypeKVDelete, Key: key, Mode: mode, Body: comparand(mode, match, digest)}
}

// comparand is a value condition's Body: the value, or the digest's 8
// big-endian bytes; nil for the other modes.
func comparand(mode SetMode, match []byte, digest uint64) []byte {
	switch mode {
	case SetIfEq, SetIfNe:
		if match == nil {
			return []byte{} // an empty value is a value: Body is sent as given
		}
		return match
	case SetIfDigestEq, SetIfDigestNe:
		return binary.BigEndian.AppendUint64(nil, digest)
	}
	return nil
}

// KVIncrCommand adds delta to the key's decimal integer value (absent: 0);
// Result.Value is the new value; CodeNotInteger, CodeOverflow.
func KVIncrCommand(key []byte, delta int64) *Command {
	return &Command{Type: TypeKVIncr, Key: key, Value: strconv.AppendInt(nil, delta, 10)}
}

// KVIncrBoundedCommand is KVIncrCommand refused (CodeOutOfRange, nothing
// changed) when the result would leave [min, max]; a nil bound is none.
// The guard of a balance: UPDATE ... SET balance = balance - 100 WHERE
// balance >= 100 is a delta of -100 with min 0.
func KVIncrBoundedCommand(key []byte, delta int64, min, max *int64) *Command {
	c := KVIncrCommand(key, delta)
	if min == nil && max == nil {
		return c
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if min != nil {
		c.Flags, lo = c.Flags|FlagIncrMin, *min
	}
	if max != nil {
		c.Flags, hi = c.Flags|FlagIncrMax, *max
	}
	c.Body = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(lo)), uint64(hi))
	return c
}

// IncrBounds are a guarded increment's bounds (the whole int64 range when
// it has none); false when Body and Flags disagree.
func IncrBounds(c *Command) (lo, hi int64, ok bool) {
	if c.Flags&(FlagIncrMin|FlagIncrMax) == 0 {
		return math.MinInt64, math.MaxInt64, len(c.Body) == 0
	}
	if len(c.Body) != 16 {
		return 0, 0, false
	}
	lo, hi = int64(binary.BigEndian.Uint64(c.Body)), int64(binary.BigEndian.Uint64(c.Body[8:]))
	if c.Flags&FlagIncrMin == 0 {
		lo = math.MinInt64
	}
	if c.Flags&FlagIncrMax == 0 {
		hi = math.MaxInt64
	}
	return lo, hi, true
}

// KVExpireCommand sets the key's lifetime to lifetime from now (0: none,
// PERSIST) under the conditions of flags (FlagExpireNX, ...; FlagExpireNow
// deletes the key; FlagExpireGet answers the value too); CodeNotFound
// without the key, CodeUnchanged when a condition did not hold or there
// was no lifetime to remove.
func KVExpireCommand(key []byte, lifetime time.Duration, flags byte) *Command {
	return &Command{Type: TypeKVExpire, Key: key, TTL: lifetime, Flags: flags}
}

// KVSetRangeCommand writes value into the key's value at offset, padding
// with zero bytes (Redis SETRANGE); Result.Value is the new length, in
// decimal; CodeTooLong when the value would pass limit bytes.
func KVSetRangeCommand(key []byte, offset uint64, value []byte, limit uint64) *Command {
	return &Command{Type: TypeKVSetRange, Key: key, Value: value,
		Body: binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, offset), limit)}
}

// KVAppendCommand appends value to the key's value (Redis APPEND), as
// KVSetRangeCommand does at the value's end.
func KVAppendCommand(key, value []byte, limit uint64) *Command {
	c := KVSetRangeCommand(key, 0, value, limit)
	c.Flags = FlagRangeAppend
	return c
}

// KVIncrFloatCommand adds incr, a number as strtold reads it, to the
// key's value (absent: 0) as Redis's INCRBYFLOAT does; Result.Value is
// the new value; CodeNotFloat, CodeNotFinite.
func KVIncrFloatCommand(key, incr []byte) *Command {
	return &Command{Type: TypeKVIncrFloat, Key: key, Value: incr}
}

// KVRenameCommand moves (RenamePlain, RenameNX) or copies (RenameCopy)
// key src's value and lifetime to dst; CodeNotFound, CodeExists.
func KVRenameCommand(src, dst []byte, mode RenameMode, replace bool) *Command {
	c := &Command{Type: TypeKVRename, Key: src, Value: dst, Mode: SetMode(mode)}
	if replace {
		c.Flags = FlagCopyReplace
	}
	return c
}

// ClusterIDCommand gives the cluster its id, if it has none.
func ClusterIDCommand(id ClusterID) *Command {
	return &Command{Type: TypeClusterID, Value: append([]byte(nil), id[:]...)}
}

// MemberRemovedCommand records node id as removed, with the certificates
// it was seen with.
func MemberRemovedCommand(id string, fps []Fingerprint) *Command {
	v := make([]byte, 0, len(fps)*len(Fingerprint{}))
	for _, fp := range fps {
		v = append(v, fp[:]...)
	}
	return &Command{Type: TypeMemberRemoved, Key: []byte(id), Value: v}
}

// SetMode selects the flavour of TypeKVSet.
type SetMode byte

// The set modes.
const (
	SetPlain SetMode = 0 // unconditional set
	SetNX    SetMode = 1 // only if the key does not exist
	SetCAS   SetMode = 2 // only if the key's version equals Command.Version (0: must not exist)
	SetXX    SetMode = 3 // only if the key exists (fsm.ErrNotFound if not)
	// The value conditions of Redis 8.4's SET IFEQ|IFNE|IFDEQ|IFDNE and
	// DELEX (valueMatches). Command.Body is what they compare with: the
	// value itself, or the value's digest (Digest) as 8 big-endian bytes.
	// Refused: CodeVersionMismatch.
	SetIfEq       SetMode = 4 // only if the key exists and its value is Body
	SetIfNe       SetMode = 5 // only if the key is absent or its value is not Body
	SetIfDigestEq SetMode = 6 // only if the key exists and its value's digest is Body
	SetIfDigestNe SetMode = 7 // only if the key is absent or its value's digest is not Body
)

// Begin flags.
const (
	// FlagReleaseUnknown: when the existing record's outcome is unknown
	// (its processing deadline passed), take it over instead of reporting it.
	FlagReleaseUnknown byte = 1 << 0
	// FlagRejectSuspect: refuse to begin a suspected duplicate (CodeSuspect)
	// instead of beginning it and reporting the suspicion.
	FlagRejectSuspect byte = 1 << 1
)

// KVSet flags.
const (
	// FlagKeepTTL: keep the key's lifetime instead of setting Command.TTL
	// (which must be zero); a new key never expires.
	FlagKeepTTL byte = 1 << 0
	// FlagReturnOld: the result carries the value the key had before, set
	// or not (Redis SET ... GET), in Result.Value. The code says whether
	// it had one: CodeOK and CodeExists yes, CodeCreated and CodeNotFound no.
	FlagReturnOld byte = 1 << 1
)

// KVIncr flags: the bounds of a guarded increment, in Command.Body.
const (
	FlagIncrMin byte = 1 << 0
	FlagIncrMax byte = 1 << 1
)

// KVExpire flags: the conditions of Redis 7's EXPIRE, on the lifetime the
// key has (no lifetime counts as infinite), and expiry at once.
const (
	FlagExpireNX  byte = 1 << 0 // only if the key has no lifetime
	FlagExpireXX  byte = 1 << 1 // only if it has one
	FlagExpireGT  byte = 1 << 2 // only if the new expiry is later
	FlagExpireLT  byte = 1 << 3 // only if the new expiry is earlier
	FlagExpireNow byte = 1 << 4 // the key expires now: it is deleted (TTL must be zero)
	// FlagExpireGet: the result carries the key's value, changed or not
	// (Redis's GETEX), in Result.Value.
	FlagExpireGet byte = 1 << 5
	expireFlags        = FlagExpireNX | FlagExpireXX | FlagExpireGT | FlagExpireLT | FlagExpireNow | FlagExpireGet
)

// KVSetRange flags.
const (
	// FlagRangeAppend: the offset is the value's length (Redis APPEND).
	FlagRangeAppend byte = 1 << 0
)

// Complete flags.
const (
	// FlagBodyDropped: the response body was too large to store; replays
	// cannot be served.
	FlagBodyDropped byte = 1 << 0
)
