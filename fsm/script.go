package fsm

import (
	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// A script's effects (package command's script.go): the node a client
// sent a script to ran it once in a sandbox (sandbox.go); its log entry is
// what it read and the KV commands it made. Applying them is optimistic
// concurrency: every key the script touched must still be as the script
// saw it, else nothing is applied (CodeConflict).

// encodeEffects is a script's effects body (the sandbox's Effects).
var encodeEffects = command.EncodeEffects

// The row's apply reads the table (the nested commands' rows): set here,
// once it is built.
func init() { commands[command.TypeScriptEffects].apply = (*applier).scriptEffects }

// scriptEffects is TypeScriptEffects's apply (see the top of this file).
func (a *applier) scriptEffects(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	e, err := command.DecodeEffects(c.Body)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	kv := boltKV{a, tx}
	// At the state machine's clock: a key the script saw live must be
	// live now (and so at the script's clock, which is not later than
	// the read it saw it live at); one it did not see live must not be,
	// and an expired entry of it is removed here, so the writes below
	// find it absent, as the sandbox did.
	for _, r := range e.Reads {
		cur, live, err := a.liveKV(kv, r.Key)
		if err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		if (live != r.Live || (live && (cur.Version != r.Version || cur.ExpiresAt != r.ExpiresAt))) && !mutantScriptNoReadCheck {
			return &command.Result{Code: command.CodeConflict}
		}
	}
	now := a.now
	a.now = e.Now // the writes answer as they did in the sandbox
	defer func() { a.now = now }()
	for i := range e.Writes {
		if i > 0 {
			rev = a.nextRev(0)
		}
		w := &e.Writes[i]
		if r := commands[w.Type].kv(a, kv, w, rev); r.Code == command.CodeStorage {
			return r
		}
	}
	return &command.Result{Code: command.CodeOK}
}

// The applier's rows of this file's commands (commands.go joins them).
var scriptApplies = applies{
	command.TypeScriptEffects: {remembered: true}, // apply reads the table: set by init
}
