package boltcheck

import "golang.org/x/sys/unix"

// populate reads the whole mapped file in order into the map before the
// walk follows its pages in tree order: one sequential read from a cold
// disk, not a random read per page, and no page fault per page after. A
// kernel without MADV_POPULATE_READ (before Linux 5.14) refuses, and the
// walk faults the pages in as it goes. The pages stay in the page cache
// for bbolt's open.
func populate(data []byte) {
	unix.Madvise(data, unix.MADV_POPULATE_READ)
}
