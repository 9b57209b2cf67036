//go:build !linux

package resp

// lowerThreadPriority does nothing off Linux: the slots alone bound the
// scripts' CPU there.
func lowerThreadPriority() error { return nil }
