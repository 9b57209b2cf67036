package storeapi

import "github.com/idemgate/idemgate/command"

// Reserved keys. The KV keyspace is every face's (/v1/kv, the Redis
// protocol), and idemgate keeps records of its own in it (a member's API
// address, which /v1/cluster shows). Keys that begin with a NUL byte are
// idemgate's: the store refuses them in every KV operation a face calls,
// before anything is proposed or read, whatever the face's own key rules.

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

// CheckKeyspaceKey refuses a reserved key (ErrReservedKey) but takes a
// key of any keyspace (command.KeyspaceKey): the store checks with it the keys
// of the Redis face, which names a key of its connection's keyspace as
// command.KeyspaceKey stores it, having checked the client's key with
// CheckKVKey first.
func CheckKeyspaceKey(key []byte) error {
	if _, _, ok := command.KeyspaceOf(key); !ok && len(key) > 0 {
		return ErrReservedKey
	}
	return nil
}
