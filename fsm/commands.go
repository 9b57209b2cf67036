package fsm

import (
	bolt "go.etcd.io/bbolt"
)

// The applier's table: how each command of package command's table is
// applied. A row exists exactly for each Type that package's table
// declares (TestApplyTableComplete), with a sandbox apply (kv) exactly
// for the rows a script may make (Op.Script). Indexed by the type's byte,
// so no command read from the log can index past it.

// applySpec is how the state machine applies one command type.
type applySpec struct {
	// remembered: a command carrying a request id is applied once, and a
	// retry under the id is answered with the first result (reqid.go).
	// What changes nothing when applied again is not remembered.
	remembered bool
	// settled, where set, reports that a remembered command needs no
	// memory after all: the state it leaves answers its retry as the
	// first attempt was answered for longer than the memory would
	// (reqid.go), so its id is neither looked up nor stored.
	settled func(c *Command) bool
	// apply applies the command in the batch's transaction; rev is its
	// revision (applier.nextRev).
	apply func(a *applier, tx *bolt.Tx, c *Command, rev uint64) *Result
	// kv, for a command of the KV keyspace that a script may make, applies
	// it to a kvStore: the batch's transaction or a script's sandbox
	// (sandbox.go). nil: a script cannot make it.
	kv func(a *applier, kv kvStore, c *Command, rev uint64) *Result
}

// commands is the applier's table, by Type.
var commands = [256]applySpec{
	TypeNoop:           {apply: (*applier).noop},
	TypeRecordBegin:    {remembered: true, apply: (*applier).recordBegin},
	TypeRecordComplete: {remembered: true, apply: (*applier).recordComplete},
	TypeRecordRelease:  {remembered: true, apply: (*applier).recordRelease},
	TypeExpire:         {apply: (*applier).expire},
	TypeTokenIssue:     {remembered: true, apply: (*applier).tokenIssue},
	TypeTokenConsume:   {remembered: true, apply: (*applier).tokenConsume},
	TypeKVSet:          {remembered: true, apply: (*applier).kvSet, kv: (*applier).kvSetIn},
	TypeKVGetDel:       {remembered: true, apply: (*applier).kvGetDel, kv: (*applier).kvGetDelIn},
	TypeKVDelete:       {remembered: true, apply: (*applier).kvDelete, kv: (*applier).kvDeleteIn},
	TypeKVIncr:         {remembered: true, apply: (*applier).kvIncr, kv: (*applier).kvIncrIn},
	TypeKVExpire:       {remembered: true, apply: (*applier).kvExpire, kv: (*applier).kvExpireIn},
	TypeClusterID:      {apply: (*applier).clusterID},
	TypeMemberRemoved:  {apply: (*applier).memberRemoved},
	TypeKVRead:         {apply: (*applier).kvRead},
	TypeKVTx:           {remembered: true, apply: (*applier).kvTx},
	TypeScriptEffects:  {remembered: true}, // apply reads this table: set by script.go's init
	TypeKVSetRange:     {remembered: true, apply: (*applier).kvSetRange, kv: (*applier).kvSetRangeIn},
	TypeKVIncrFloat:    {remembered: true, apply: (*applier).kvIncrFloat, kv: (*applier).kvIncrFloatIn},
	TypeKVRename:       {remembered: true, apply: (*applier).kvRename},
	TypeOnceBegin:      {remembered: true, settled: onceBeginSettled, apply: (*applier).onceBegin},
	TypeOnceRenew:      {remembered: true, apply: (*applier).onceRenew},
	TypeOnceComplete:   {remembered: true, settled: onceCompleteSettled, apply: (*applier).onceComplete},
	TypeOnceRelease:    {remembered: true, apply: (*applier).onceRelease},
	TypeLockAcquire:    {remembered: true, apply: (*applier).lockAcquire},
	TypeLockRenew:      {remembered: true, apply: (*applier).lockRenew},
	TypeLockRelease:    {remembered: true, apply: (*applier).lockRelease},
	TypeLockLeave:      {remembered: true, apply: (*applier).lockLeave},
	TypeListPush:       {remembered: true, apply: (*applier).listPush, kv: (*applier).listPushIn},
	TypeListPop:        {remembered: true, apply: (*applier).listPop, kv: (*applier).listPopIn},
	TypeListRem:        {remembered: true, apply: (*applier).listRem, kv: (*applier).listRemIn},
	TypeListTrim:       {remembered: true, apply: (*applier).listTrim, kv: (*applier).listTrimIn},
	TypeKVFlush:        {remembered: true, apply: (*applier).kvFlush},
}

// spec returns how t is applied, or nil for a type this build does not
// apply.
func spec(t Type) *applySpec {
	if !t.Known() || commands[t].apply == nil {
		return nil
	}
	return &commands[t]
}
