package raftstore

import (
	"context"
	"time"

	"github.com/idemgate/idemgate/command"
)

// Idemgate's own records in the KV keyspace: a member's API address, which
// /v1/cluster shows, under "\x00node/<id>". Keys that begin with a NUL
// byte are reserved (storeapi.CheckKVKey): the KV operations the faces call
// (Commands.ApplyKV and ApplyInOrder, Store.KV) refuse them with
// storeapi.ErrReservedKey before anything is proposed or read, so no face
// can write or read them; these records are written and read by the methods
// below, which name what they hold.

// NodeAPIKey is the reserved key of member id's API address.
func NodeAPIKey(id string) []byte { return []byte("\x00node/" + id) }

// SetNodeAPI records member id's API address (a node added at runtime,
// which the cluster file does not list).
func (s Commands) SetNodeAPI(ctx context.Context, id, api string) error {
	return s.applyErr(ctx, command.KVSetCommand(command.KVSetRequest{Key: NodeAPIKey(id), Value: []byte(api)}))
}

// NodeAPI is the API address SetNodeAPI recorded for member id, from this
// node's state; false when there is none.
func (s *Store) NodeAPI(id string) (string, bool) {
	e, err := s.fsm.KV(NodeAPIKey(id), time.Now())
	return string(e.Value), err == nil
}
