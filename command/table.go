package command

import (
	"fmt"
	"time"
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
	TypeNoop: {name: "noop", uses: fValue, diskLow: true, Op: Op{Write: true, Role: RoleNode}},
	// Value: the request's fingerprint; Timeout: the processing timeout;
	// DigestKey (empty: none) and Window: suspect detection (suspect.go).
	TypeRecordBegin: {name: "record_begin", uses: fKey | fValue | fTTL | fTimeout | fFlags | fDigestKey | fWindow, key: true,
		Op: Op{Write: true, Role: RoleWrite}},
	TypeRecordComplete: {name: "record_complete", uses: fKey | fFence | fStatus | fFlags | fHeaders | fBody, key: true, check: checkComplete,
		Op: Op{Write: true, Role: RoleWrite}},
	// Fence 0: an operator's release of whatever owns the record.
	TypeRecordRelease: {name: "record_release", uses: fKey | fFence, key: true,
		Op: Op{Write: true, Role: RoleWrite}},
	// Entries: what a sweeper found due.
	TypeExpire: {name: "expire", uses: fEntries, diskLow: true, check: checkExpire,
		Op: Op{Write: true, Role: RoleNode}},
	// Key: TokenKey(scope, token).
	TypeTokenIssue:   {name: "token_issue", uses: fKey | fTTL, key: true, Op: Op{Write: true, Role: RoleWrite}},
	TypeTokenConsume: {name: "token_consume", uses: fKey, key: true, Op: Op{Write: true, Role: RoleWrite}},
	// Version: the version a SetCAS expects (0: the key must not exist).
	TypeKVSet: {name: "kv_set", uses: fKey | fValue | fTTL | fMode | fVersion | fFlags | fBody, key: true, check: checkKVSet,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite}},
	// Version (0: any): compare-and-delete, for both.
	TypeKVGetDel: {name: "kv_getdel", uses: fKey | fVersion, key: true,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite}},
	TypeKVDelete: {name: "kv_delete", uses: fKey | fVersion | fMode | fBody, key: true, check: checkKVDelete,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite}},
	// Value: the increment, a signed decimal integer (Redis INCRBY).
	// Flags and Body: the bounds of a guarded increment (FlagIncrMin,
	// FlagIncrMax; Body the two, 8 big-endian bytes each).
	TypeKVIncr: {name: "kv_incr", uses: fKey | fValue | fFlags | fBody, key: true, check: checkKVIncr,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite}},
	// TTL: the new lifetime (zero without FlagExpireNow: none; Redis
	// EXPIRE, PERSIST).
	TypeKVExpire: {name: "kv_expire", uses: fKey | fTTL | fFlags, key: true, check: checkKVExpire,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite}},
	// Value: the 16-byte id; applied only while the state holds none
	// (cluster.go).
	TypeClusterID: {name: "cluster_id", uses: fValue, diskLow: true, check: checkClusterID,
		Op: Op{Write: true, Role: RoleNode}},
	// Key: the node id; Value: its certificates' fingerprints, 32 bytes
	// each (cluster.go).
	TypeMemberRemoved: {name: "member_removed", uses: fKey | fValue, key: true, diskLow: true, check: checkMemberRemoved,
		Op: Op{Write: true, Role: RoleNode}},
	// A read in the log, a transaction's (kv_tx.go); Flags: FlagReadValue.
	TypeKVRead: {name: "kv_read", uses: fKey | fFlags, key: true, check: checkKVRead,
		Op: Op{Script: true, Tx: true, Role: RoleRead}},
	// Value: the watches and the commands (kv_tx.go); Version: the bytes
	// of values its results may carry.
	TypeKVTx: {name: "kv_tx", uses: fValue | fVersion, check: checkKVTx, Op: Op{Write: true, Role: RoleWrite}},
	// Body: a script's effects (script.go): what it read, at which
	// versions, and the KV commands it made; applied whole only while
	// every key it read is as it read it (CodeConflict if not).
	TypeScriptEffects: {name: "script_effects", uses: fBody, Op: Op{Write: true, Role: RoleWrite}},
	// Value: the bytes to write; Body: the offset and the longest the
	// value may become, 8 big-endian bytes each; Flags: FlagRangeAppend
	// (Redis SETRANGE, APPEND; kv_string.go).
	TypeKVSetRange: {name: "kv_setrange", uses: fKey | fValue | fFlags | fBody, key: true, check: checkKVSetRange,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite}},
	// Value: the increment, as strtold reads it (Redis INCRBYFLOAT).
	TypeKVIncrFloat: {name: "kv_incrfloat", uses: fKey | fValue, key: true, check: checkKVIncrFloat,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite}},
	// Key: the source; Value: the destination; Mode: a RenameMode; Flags:
	// FlagCopyReplace (Redis RENAME, RENAMENX, COPY; kv_rename.go). Not a
	// script's: a script's effects name the keys they write by Key alone.
	TypeKVRename: {name: "kv_rename", uses: fKey | fValue | fMode | fFlags, key: true, check: checkKVRename,
		Op: Op{Write: true, Tx: true, Role: RoleWrite}},
	// Key: OnceKey(scope, key). Value: the payload's fingerprint
	// (OnceFingerprint); Timeout: the lease; TTL: the scope's retention.
	TypeOnceBegin: {name: "once_begin", uses: fKey | fValue | fTTL | fTimeout, key: true, check: checkOnceBegin,
		Op: Op{Write: true, Role: RoleWrite}},
	// Timeout: the new lease, from the renew.
	TypeOnceRenew: {name: "once_renew", uses: fKey | fFence | fTimeout, key: true, check: checkOnceRenew,
		Op: Op{Write: true, Role: RoleWrite}},
	// Body: the result; TTL: the scope's retention, from the complete.
	TypeOnceComplete: {name: "once_complete", uses: fKey | fFence | fBody | fTTL, key: true, check: checkOnceComplete,
		Op: Op{Write: true, Role: RoleWrite}},
	TypeOnceRelease: {name: "once_release", uses: fKey | fFence, key: true, check: checkFence,
		Op: Op{Write: true, Role: RoleWrite}},
	// Key: the lock's name (CheckLockName). Value: the owner token the
	// waiting request chose; Timeout: the lease; TTL: how long to wait
	// in the queue (0: not at all).
	TypeLockAcquire: {name: "lock_acquire", uses: fKey | fValue | fTTL | fTimeout, key: true, check: checkLockAcquire,
		Op: Op{Write: true, Role: RoleWrite}},
	// Timeout: the new lease, from the renew.
	TypeLockRenew: {name: "lock_renew", uses: fKey | fFence | fTimeout, key: true, check: checkLockRenew,
		Op: Op{Write: true, Role: RoleWrite}},
	TypeLockRelease: {name: "lock_release", uses: fKey | fFence, key: true, check: checkLockFence,
		Op: Op{Write: true, Role: RoleWrite}},
	// Value: the waiter's owner token; Version: its ticket (0: unknown,
	// only a grant it holds is given back).
	TypeLockLeave: {name: "lock_leave", uses: fKey | fValue | fVersion, key: true, check: checkLockLeave,
		Op: Op{Write: true, Role: RoleWrite}},
	// The list commands (list.go). Value: the elements, a list's
	// encoding; Flags: FlagListRight, FlagListExisting.
	TypeListPush: {name: "list_push", uses: fKey | fValue | fFlags, key: true, check: checkListPush,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite}},
	// Value: the further keys (BLPOP's), a list's encoding; Body: the
	// count, with FlagListCount.
	TypeListPop: {name: "list_pop", uses: fKey | fValue | fFlags | fBody, key: true, check: checkListPop,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite}},
	// Value: the element; Body: the signed count.
	TypeListRem: {name: "list_rem", uses: fKey | fValue | fBody, key: true, check: checkListRem,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite}},
	// Body: start and stop, signed.
	TypeListTrim: {name: "list_trim", uses: fKey | fBody, key: true, check: checkListTrim,
		Op: Op{Write: true, Script: true, Tx: true, Role: RoleWrite}},
	// Mode: the keyspace; Flags: FlagFlushAll; Version: the flush's bound
	// (0: this entry's revision); Value: the stored key it resumes at
	// (Redis FLUSHDB, FLUSHALL; kv_flush.go). Proposed while the disk is
	// low: it frees space.
	TypeKVFlush: {name: "kv_flush", uses: fMode | fFlags | fVersion | fValue, diskLow: true, check: checkKVFlush,
		Op: Op{Write: true, Role: RoleAdmin}},
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
