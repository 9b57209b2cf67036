//go:build !linux

package boltcheck

// populate does nothing where there is no MADV_POPULATE_READ: the walk
// faults the pages in as it goes.
func populate([]byte) {}
