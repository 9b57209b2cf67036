package fsm

import (
	"fmt"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// The applier's table: how each command of package command's table is
// applied. A row exists exactly for each Type that package's table
// declares (TestApplyTable), with a sandbox apply (kv) exactly for the
// writes a script may make (Op.Script). Each file declares the rows of
// its commands beside their functions (applies), so a new command of a
// kind this package applies already is its apply function and its row
// in one file. Indexed by the type's byte, so no command read from the
// log can index past it.

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
	settled func(c *command.Command) bool
	// apply applies the command in the batch's transaction; rev is its
	// revision (applier.nextRev).
	apply func(a *applier, tx *bolt.Tx, c *command.Command, rev uint64) *command.Result
	// kv, for a command of the KV keyspace that a script may make, applies
	// it to a kvStore: the batch's transaction or a script's sandbox
	// (sandbox.go). nil: a script cannot make it.
	kv func(a *applier, kv kvStore, c *command.Command, rev uint64) *command.Result
}

// applies is a part of the applier's table: the rows of one file's
// commands, declared beside the functions they name.
type applies map[command.Type]applySpec

// noopApplies is the row of the leader's tick, whose apply is fsm.go's.
var noopApplies = applies{command.TypeNoop: {apply: (*applier).noop}}

// commands is the applier's table, by Type: the files' parts, joined.
var commands = join(noopApplies, recordApplies, expireApplies, tokenApplies, kvApplies, kvIncrApplies,
	kvExpireApplies, clusterApplies, txApplies, scriptApplies, kvStringApplies, kvRenameApplies,
	onceApplies, lockApplies, listApplies, kvFlushApplies, hashApplies, setApplies, zsetApplies, streamApplies,
	streamGroupApplies)

// join is the table of parts; a type in two of them is a programming
// error, found when the package loads.
func join(parts ...applies) (table [256]applySpec) {
	var seen [256]bool
	for _, p := range parts {
		for t, s := range p {
			if seen[t] {
				panic(fmt.Sprintf("fsm: %s has two rows in the applier's table", t))
			}
			seen[t], table[t] = true, s
		}
	}
	return table
}

// spec returns how t is applied, or nil for a type this build does not
// apply.
func spec(t command.Type) *applySpec {
	if !t.Known() || commands[t].apply == nil {
		return nil
	}
	return &commands[t]
}
