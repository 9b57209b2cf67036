package raftstore

import (
	"context"
	"time"

	"github.com/idemgate/idemgate/fsm"
)

// Reserved keys. The KV keyspace is every face's (/v1/kv, the Redis
// protocol, and scripts and transactions when they come), and idemgate
// keeps records of its own in it: a member's API address, which
// /v1/cluster shows, under "\x00node/<id>". Keys that begin with a NUL
// byte are idemgate's. The KV operations the faces call (Commands.ApplyKV
// and ApplyInOrder, Store.KV) refuse them with ErrReservedKey before anything is proposed or read, whatever a face's
// own key rules, so no face can write or read them; idemgate's own records
// are written and read by the methods below, which name what they hold.

// reservedPrefix begins every reserved key.
const reservedPrefix = 0x00

// CheckKVKey refuses a reserved key (ErrReservedKey). The store checks
// every KV key a face names with it; a face may call it early, to refuse
// a command of many keys before any of them is written.
func CheckKVKey(key []byte) error {
	if len(key) > 0 && key[0] == reservedPrefix {
		return ErrReservedKey
	}
	return nil
}

// FirstKVKey is where a walk of the KV keyspace that must not show
// reserved keys begins: they all sort before it.
var FirstKVKey = []byte{reservedPrefix + 1}

// NodeAPIKey is the reserved key of member id's API address.
func NodeAPIKey(id string) []byte { return []byte("\x00node/" + id) }

// SetNodeAPI records member id's API address (a node added at runtime,
// which the cluster file does not list).
func (s Commands) SetNodeAPI(ctx context.Context, id, api string) error {
	return s.applyErr(ctx, fsm.KVSetCommand(fsm.KVSetRequest{Key: NodeAPIKey(id), Value: []byte(api)}))
}

// NodeAPI is the API address SetNodeAPI recorded for member id, from this
// node's state; false when there is none.
func (s *Store) NodeAPI(id string) (string, bool) {
	e, err := s.fsm.KV(NodeAPIKey(id), time.Now())
	return string(e.Value), err == nil
}
