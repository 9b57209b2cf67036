package fsm

import (
	"bytes"
	"errors"

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

// checkKVRename: a known flavour, a destination that is a key and not a
// reserved one (idemgate's own begin with a NUL byte, and only idemgate
// writes them, never by a rename; the store checks the source).
func checkKVRename(c *Command) error {
	switch {
	case RenameMode(c.Mode) > RenameCopy:
		return errors.New("unknown rename mode")
	case c.Flags&^FlagCopyReplace != 0, c.Flags != 0 && RenameMode(c.Mode) != RenameCopy:
		return errors.New("unknown rename flags")
	case len(c.Value) == 0 || len(c.Value) > MaxStoredKeyLen:
		return errors.New("the destination is empty or too long")
	case c.Value[0] == 0 && !isKeyspaceKey(c.Value):
		return errors.New("the destination is a reserved key")
	}
	return nil
}

// RenameMode selects the flavour of TypeKVRename.
type RenameMode byte

// The rename modes.
const (
	RenamePlain RenameMode = 0 // RENAME: the destination is replaced
	RenameNX    RenameMode = 1 // RENAMENX: only while the destination is absent
	RenameCopy  RenameMode = 2 // COPY: the source stays; the destination only while absent, unless FlagCopyReplace
)

// KVRename flags.
const (
	// FlagCopyReplace: COPY ... REPLACE.
	FlagCopyReplace byte = 1 << 0
)
