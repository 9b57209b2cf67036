package fsm

import (
	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// What a stream's consumer groups read of the stream itself: its header's
// facts and its entries. The stream's storage is the stream's own file;
// this is the groups' one window on it.

// groupStream is a stream as its groups see it.
type groupStream struct {
	e            command.KVEntry
	sid          uint64 // its elements' prefix
	length       uint64
	entriesAdded uint64
	// last is the last id generated; lastValid the last entry's there
	// (Redis's streamLastValidID); first the first entry's (Redis's
	// recorded first entry id); maxDeleted the largest id deleted.
	last, lastValid, first, maxDeleted command.EntryID
}

// groupStreamOf reads key's stream: exists false when there is none;
// CodeWrongType when key holds another kind.
func (a *applier) groupStreamOf(tx *bolt.Tx, key []byte) (s groupStream, exists bool, code command.Code) {
	e, ok, err := a.liveKV(boltKV{a, tx}, key)
	switch {
	case err != nil:
		return s, false, command.CodeStorage
	case !ok:
		return s, false, command.CodeOK
	}
	return groupStream{e: e}, true, command.CodeWrongType
}

// makeGroupStream stores an empty stream at key, which holds nothing
// (XGROUP CREATE's MKSTREAM).
func (a *applier) makeGroupStream(_ *bolt.Tx, _ []byte, _ uint64) (groupStream, command.Code) {
	return groupStream{}, command.CodeStorage
}

// entry is the fields and values of the entry id, copied; false when
// the stream holds no such entry.
func (s groupStream) entry(_ *bolt.Tx, _ command.EntryID) ([][]byte, bool) { return nil, false }

// entriesFrom calls fn with the entries from id from on, in order, until
// fn returns false; the fields are copies.
func (s groupStream) entriesFrom(_ *bolt.Tx, _ command.EntryID, _ func(id command.EntryID, fields [][]byte) bool) error {
	return nil
}
