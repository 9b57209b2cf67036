package command

import "errors"

// checkKVFlush: a keyspace, and only FLUSHALL's flag.
func checkKVFlush(c *Command) error {
	switch {
	case int(c.Mode) >= Keyspaces:
		return errors.New("no such keyspace")
	case c.Flags&^FlagFlushAll != 0:
		return errors.New("unknown flush flags")
	case len(c.Value) > MaxStoredKeyLen+len(keyspaceTag)+1:
		return errors.New("the resume key is too long")
	}
	return nil
}

// FlagFlushAll: a flush of every keyspace (FLUSHALL), not one.
const FlagFlushAll byte = 1 << 0

// KVFlushCommand is one step of a flush of keyspace db, or of every
// keyspace (all): bound 0 and from nil for the first, then the previous
// step's Result.Version and Result.Value, until its Value is empty.
func KVFlushCommand(db int, all bool, bound uint64, from []byte) *Command {
	c := &Command{Type: TypeKVFlush, Mode: SetMode(db), Version: bound, Value: from}
	if all {
		c.Mode, c.Flags = 0, FlagFlushAll
	}
	return c
}
