package fsm

import (
	"bytes"
	"testing"
)

// TestCodeEnd: codeEnd is one past the last code package command knows,
// so a remembered result is refused exactly when its code is unknown.
func TestCodeEnd(t *testing.T) {
	if !(codeEnd - 1).Known() || codeEnd.Known() {
		t.Fatalf("codeEnd = %d: %d known %v, %d known %v", codeEnd, codeEnd-1, (codeEnd - 1).Known(), codeEnd, codeEnd.Known())
	}
}

// TestKeyspaceTag: keyspaceTag begins every stored key of a keyspace
// above 0, as package command's KeyspaceKey writes them, and only the
// keyspace's byte follows it.
func TestKeyspaceTag(t *testing.T) {
	for db := 1; db < Keyspaces; db++ {
		if p := KeyspacePrefix(db); !bytes.Equal(p, append([]byte(keyspaceTag), byte(db))) {
			t.Errorf("KeyspacePrefix(%d) = %q, want %q and the keyspace's byte", db, p, keyspaceTag)
		}
	}
}
