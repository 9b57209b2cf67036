package boltcheck

import (
	"math/rand"
	"os"
)

// The damage the tests of the packages that open bbolt files (fsm,
// raftstore, the binary) inflict, as a teammate reproduced it on a node.

// OverwritePages writes random bytes (from a fixed seed) over every third
// 4 KiB page of the file at path from page 2, leaving the meta pages.
func OverwritePages(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewSource(1))
	for off := 2 * 4096; off+4096 <= len(b); off += 3 * 4096 {
		rng.Read(b[off : off+4096])
	}
	return os.WriteFile(path, b, 0o600)
}

// TruncateHalf cuts the file at path to half its size: bbolt maps past
// the end, and its first read there was a SIGBUS.
func TruncateHalf(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.Truncate(path, st.Size()/2)
}
