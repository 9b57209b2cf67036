package fsm

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/internal/boltcheck"
)

// Compact rewrites the closed data file at path to hold only its live
// data, as etcd's defrag does: bbolt never gives freed pages back to the
// file system, so after a mass expiry the file stays at its largest. The
// pairs are copied in key order into path.compact (full pages), which is
// checked, synced and renamed over path; the file is left closed cleanly.
// The caller holds the data directory's lock, and the file must have been
// closed cleanly (Open and Close it first). It returns the file's size
// before and after.
func Compact(path string) (before, after int64, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("fsm: compact: %w", err)
	}
	if _, err := os.Stat(path + cleanSuffix); err != nil {
		return 0, 0, fmt.Errorf("fsm: compact: %s was not closed cleanly: open and close it first", path)
	}
	src, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return 0, 0, fmt.Errorf("fsm: compact: %w", err)
	}
	defer src.Close()
	tmp := path + ".compact"
	os.Remove(tmp) // a previous attempt's
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(src.View(func(tx *bolt.Tx) error { return writePairs(pw, tx) }))
	}()
	err = readPairs(pr, tmp)
	pr.CloseWithError(err) // stops the writer if the reader failed
	if err == nil {
		err = boltcheck.Check(tmp, true)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, 0, fmt.Errorf("fsm: compact: %w", err)
	}
	src.Close()
	// The marker goes first: a crash between the two leaves a file that is
	// checked on open, never one trusted without its marker.
	os.Remove(path + cleanSuffix)
	if err := os.Rename(tmp, path); err != nil {
		return 0, 0, fmt.Errorf("fsm: compact: %w", err)
	}
	if err := syncDirOf(path); err != nil {
		return 0, 0, err
	}
	if err := writeFileSync(path+cleanSuffix, strings.NewReader("closed cleanly\n")); err != nil {
		return 0, 0, fmt.Errorf("fsm: compact: %w", err)
	}
	nst, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("fsm: compact: %w", err)
	}
	return st.Size(), nst.Size(), nil
}

func syncDirOf(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("fsm: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsm: sync %s: %w", filepath.Dir(path), err)
	}
	return nil
}
