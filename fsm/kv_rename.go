package fsm

import (
	"bytes"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// kvRename moves (or copies) a key's value and lifetime to another key,
// as Redis's RENAME, RENAMENX and COPY do: c.Key the source, c.Value the
// destination, c.Mode the flavour. The destination is a new write (a new
// version); a rename removes the source. CodeNotFound: no source;
// CodeExists: RENAMENX, or COPY without FlagCopyReplace, found the
// destination; nothing changed then. A rename of a key onto itself
// changes nothing (RENAMENX answers CodeExists, as Redis answers 0).
func (a *applier) kvRename(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	kv := boltKV{a, tx}
	src, ok, err := a.liveKV(kv, c.Key)
	switch {
	case err != nil:
		return &command.Result{Code: command.CodeStorage}
	case !ok:
		return &command.Result{Code: command.CodeNotFound}
	case bytes.Equal(c.Key, c.Value):
		if command.RenameMode(c.Mode) == command.RenameNX {
			return &command.Result{Code: command.CodeExists}
		}
		return &command.Result{Code: command.CodeOK, Version: src.Version, ExpiresAt: src.ExpiresAt}
	}
	src = src.Clone() // before a write reuses its memory
	dst, exists, err := a.liveKV(kv, c.Value)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if exists && (command.RenameMode(c.Mode) == command.RenameNX || (command.RenameMode(c.Mode) == command.RenameCopy && c.Flags&command.FlagCopyReplace == 0)) {
		return &command.Result{Code: command.CodeExists}
	}
	e := command.KVEntry{Version: rev, Created: rev, ExpiresAt: src.ExpiresAt, Kind: src.Kind, Value: src.Value}
	copying := command.RenameMode(c.Mode) == command.RenameCopy
	if copying && src.Kind.IsColl() {
		// A copy of a collection is a new one: its elements again,
		// under its own id.
		h, ok := command.DecodeCollHeader(src.Value)
		if !ok {
			return &command.Result{Code: command.CodeStorage}
		}
		to := h
		to.ID = rev
		if err := copyElems(tx, h, to); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		e.Value = append(to.Encode(), src.Value[command.CollHeaderLen:]...) // a stream's header goes on
	}
	if err := kv.put(c.Value, &e, dst, exists); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if !copying {
		// The header moves; its elements stay under its id.
		if err := a.removeKey(tx, c.Key, src); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
	}
	return &command.Result{Code: command.CodeOK, Version: rev, ExpiresAt: e.ExpiresAt}
}

// The applier's rows of this file's commands (commands.go joins them).
var kvRenameApplies = applies{
	command.TypeKVRename: {remembered: true, apply: (*applier).kvRename},
}
