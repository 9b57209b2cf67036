package command

import "bytes"

// Keyspaces: the Redis face's SELECT 0-15. Every keyspace lives in the one
// KV bucket, so every KV command, transaction, script, expiry and
// snapshot works on them unchanged, as bytes; only the key differs. Keyspace
// 0 is the one the HTTP API and a new Redis connection use, and its keys
// are stored as named, as they always were (old files need nothing). Every
// other keyspace's key, and keyspace 0's empty key (bbolt holds no empty
// key, and Redis has one), is stored under a reserved prefix:
//
//	NUL "db" <keyspace byte> <the client's key>
//
// Keys that begin with NUL are idemgate's own, refused from every face
// (package storeapi), so no client key can look like another keyspace's:
// the prefix is only ever written by KeyspaceKey, from a keyspace number
// and a key the face checked. Keyspace 0 under the prefix holds the empty
// key alone.

// Keyspaces is how many keyspaces there are (Redis's default "databases").
const Keyspaces = 16

// keyspaceTag begins a keyspace's key (after it, the keyspace's byte).
const keyspaceTag = "\x00db"

// KeyspaceKey is where keyspace db's key is stored. db must be below
// Keyspaces.
func KeyspaceKey(db int, key []byte) []byte {
	if db == 0 && len(key) > 0 {
		return key
	}
	b := make([]byte, 0, len(keyspaceTag)+1+len(key))
	b = append(b, keyspaceTag...)
	b = append(b, byte(db))
	return append(b, key...)
}

// KeyspacePrefix begins every stored key of keyspace db above 0 (keyspace
// 0's: its empty key).
func KeyspacePrefix(db int) []byte { return KeyspaceKey(db, nil) }

// KeyspaceOf reads a stored KV key back: its keyspace and the client's
// key; false for a reserved key of idemgate's own.
func KeyspaceOf(stored []byte) (db int, key []byte, ok bool) {
	switch {
	case len(stored) > 0 && stored[0] != 0:
		return 0, stored, true
	case len(stored) < len(keyspaceTag)+1 || !bytes.HasPrefix(stored, []byte(keyspaceTag)):
		return 0, nil, false
	}
	db = int(stored[len(keyspaceTag)])
	key = stored[len(keyspaceTag)+1:]
	if db >= Keyspaces || (db == 0 && len(key) > 0) {
		return 0, nil, false
	}
	return db, key, true
}

// isKeyspaceKey: stored is a client's key of some keyspace (not a
// reserved key of idemgate's own).
func isKeyspaceKey(stored []byte) bool {
	_, _, ok := KeyspaceOf(stored)
	return ok
}
