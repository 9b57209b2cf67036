package storeapi

import "github.com/idemgate/idemgate/command"

// Sandbox runs a script's KV commands against a node's applied state
// without changing it, and turns what they did into one log entry (a
// command.TypeScriptEffects, applied only while every key it read is as
// it read it). The store makes one per run (the state machine's, so a
// write answers in it as the log will); one goroutine uses it.
type Sandbox interface {
	// KV is the key's entry as the script sees it: its own writes, else
	// the node's state; false when it is not live at the script's clock.
	KV(key []byte) (command.KVEntry, bool, error)
	// Apply applies a KV command a script may make (command.Op.Script)
	// and returns its result; an invalid one is an error.
	Apply(c *command.Command) (*command.Result, error)
	// Wrote reports whether a command changed something.
	Wrote() bool
	// Unchanged reports whether every key the script read is still as it
	// read it: then a run that wrote nothing needs no log entry.
	Unchanged() (bool, error)
	// Effects is the log entry of what the script did; nil when it wrote
	// nothing.
	Effects() *command.Command
}

// SandboxBase reads a key for a sandbox, the first time the script
// touches it: the node's applied state (or the leader's), expiry already
// judged; false when absent.
type SandboxBase func(key []byte) (command.KVEntry, bool, error)

// SandboxElems reads elements of the collection of kind under key for a
// sandbox whose base gave the collection's header alone (a KVEntry whose
// Value is command.CollHeaderLen bytes), from the state base reads: with
// fields, a ReadFields answer (command.EncodeFound); with fields nil,
// the collection whole (command.WholeColl). version is the key's version
// the read found; ok false when it no longer holds such a collection.
type SandboxElems func(key []byte, kind command.Kind, fields [][]byte) (version uint64, value []byte, ok bool, err error)
