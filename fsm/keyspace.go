package fsm

import "github.com/idemgate/idemgate/command"

// isKeyspaceKey: stored is a client's key of some keyspace (not a
// reserved key of idemgate's own).
func isKeyspaceKey(stored []byte) bool {
	_, _, ok := command.KeyspaceOf(stored)
	return ok
}

// keyspaceTag begins every stored key of a keyspace above 0 (package
// command's KeyspaceKey; TestKeyspaceTag holds the two together).
const keyspaceTag = "\x00db"
