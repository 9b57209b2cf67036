package boltcheck

import (
	"math/rand"
	"os"
)

// The damage the tests of the packages that open bbolt files (fsm,
// raftstore, the binary) inflict: what a torn write or a full disk leaves
// in a data file.

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

// TruncateHalf cuts the file at path to half the pages in use (the high
// water mark of its newest valid meta page; half the file when neither is
// valid): bbolt maps past the end, and its first read there was a SIGBUS.
// Half the file alone could cut only the room bbolt grows a file by ahead
// of need (16 MiB), leaving a sound file.
func TruncateHalf(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	size := int64(len(b)) / 2
	var best meta
	for _, off := range []int{0, 4096} {
		if off < len(b) {
			if m, err := parseMeta(b[off:]); err == nil && m.txid >= best.txid && m.pgid*m.pageSize <= uint64(len(b)) {
				best = m
			}
		}
	}
	if best.pgid > 0 {
		size = int64(best.pgid*best.pageSize) / 2
	}
	return os.Truncate(path, size)
}
