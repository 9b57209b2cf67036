package fsm

import (
	"bytes"
	"testing"

	"github.com/idemgate/idemgate/command"
)

// TestKeyspaceTag: keyspaceTag begins every stored key of a keyspace
// above 0, as package command's KeyspaceKey writes them, and only the
// keyspace's byte follows it.
func TestKeyspaceTag(t *testing.T) {
	for db := 1; db < command.Keyspaces; db++ {
		if p := command.KeyspacePrefix(db); !bytes.Equal(p, append([]byte(keyspaceTag), byte(db))) {
			t.Errorf("KeyspacePrefix(%d) = %q, want %q and the keyspace's byte", db, p, keyspaceTag)
		}
	}
}
