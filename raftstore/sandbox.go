package raftstore

import (
	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/storeapi"
)

// NewSandbox returns a script's sandbox at now (unix nanoseconds, the
// script's clock) over base and elems (fsm.NewSandbox): the listeners run
// scripts through it without importing the state machine.
func (s *Store) NewSandbox(now int64, base storeapi.SandboxBase, elems storeapi.SandboxElems) storeapi.Sandbox {
	return fsm.NewSandbox(now, base, elems)
}
