package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Owner is the owner of dir, or of its nearest existing parent when dir
// does not exist yet (the directory a restore creates belongs to whoever
// owns where it goes).
func Owner(dir string) (uid, gid int, err error) {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err == nil {
			if sys, ok := st.Sys().(*syscall.Stat_t); ok {
				return int(sys.Uid), int(sys.Gid), nil
			}
			return -1, -1, nil
		}
		if !errors.Is(err, os.ErrNotExist) || filepath.Dir(p) == p {
			return -1, -1, fmt.Errorf("datadir: data dir: %w", err)
		}
	}
}

// KeepOwner gives dir and everything in it to uid:gid when this process
// runs as root and they are another user's: snapshot restore and recover,
// run as root (sudo), must leave files the node's service user can open.
// As any other user it does nothing: files a user creates are its own.
func KeepOwner(dir string, uid, gid int) error {
	if os.Geteuid() != 0 || uid <= 0 {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, uid, gid); err != nil {
			return fmt.Errorf("datadir: give %s back to its owner (uid %d): %w", path, uid, err)
		}
		return nil
	})
}
