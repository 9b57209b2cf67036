package command

import "errors"

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
