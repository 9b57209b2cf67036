package fsm

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// kvRename moves (or copies) a key's value and lifetime to another key,
// as Redis's RENAME, RENAMENX and COPY do: c.Key the source, c.Value the
// destination, c.Mode the flavour. The destination is a new write (a new
// version); a rename removes the source. CodeNotFound: no source;
// CodeExists: RENAMENX, or COPY without FlagCopyReplace, found the
// destination; nothing changed then. A rename of a key onto itself
// changes nothing (RENAMENX answers CodeExists, as Redis answers 0).
func (a *applier) kvRename(tx *bolt.Tx, c *Command, rev uint64) *Result {
	kv := boltKV{a, tx}
	src, ok, err := a.liveKV(kv, c.Key)
	switch {
	case err != nil:
		return &Result{Code: CodeStorage}
	case !ok:
		return &Result{Code: CodeNotFound}
	case bytes.Equal(c.Key, c.Value):
		if RenameMode(c.Mode) == RenameNX {
			return &Result{Code: CodeExists}
		}
		return &Result{Code: CodeOK, Version: src.Version, ExpiresAt: src.ExpiresAt}
	}
	src = src.Clone() // before a write reuses its memory
	dst, exists, err := a.liveKV(kv, c.Value)
	if err != nil {
		return &Result{Code: CodeStorage}
	}
	if exists && (RenameMode(c.Mode) == RenameNX || (RenameMode(c.Mode) == RenameCopy && c.Flags&FlagCopyReplace == 0)) {
		return &Result{Code: CodeExists}
	}
	e := KVEntry{Version: rev, Created: rev, ExpiresAt: src.ExpiresAt, Kind: src.Kind, Value: src.Value}
	if err := kv.put(c.Value, &e, dst, exists); err != nil {
		return &Result{Code: CodeStorage}
	}
	if RenameMode(c.Mode) != RenameCopy {
		if err := kv.del(c.Key, src); err != nil {
			return &Result{Code: CodeStorage}
		}
	}
	return &Result{Code: CodeOK, Version: rev, ExpiresAt: e.ExpiresAt}
}

// The applier's rows of this file's commands (commands.go joins them).
var kvRenameApplies = applies{
	TypeKVRename: {remembered: true, apply: (*applier).kvRename},
}
