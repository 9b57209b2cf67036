package fsm

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/internal/boltcheck"
)

// Every data file is checked before bbolt opens it (package boltcheck):
// bbolt faults or panics on a damaged file, in goroutines of its own where
// nothing recovers, so the node would crash, and crash again at every
// restart. The check is a walk of every page's ids and offsets, always, and
// bbolt's consistency check (tx.Check) on files up to
// boltcheck.FullCheckMaxBytes and on every file not closed cleanly.
//
// With NoSync, the data file is as durable as the page cache. Two marker
// files beside it say whether it can be trusted on open:
//
//   - <path>.clean, written by Close after a final sync and removed by
//     Open once the file passed its check: the last stop was clean.
//   - <path>.boot, written by Open: the kernel boot id of the run that had
//     the file open. After an unclean stop in the same boot (a process
//     crash, SIGKILL) the page cache kept every committed page, so the
//     file is consistent as of its last commit; Raft replays the rest.
//
// After an unclean stop across a reboot (power loss, kernel crash) pages
// may be torn or missing, so the file is not opened at all: it is moved
// aside and the state is rebuilt from the newest snapshot and the Raft log,
// which were fsynced. A file not closed cleanly that fails its check is
// treated the same way. Damage in a file that was closed cleanly (or is
// fsynced, without NoSync) has no such explanation: the node refuses to
// start and says so, and the operator moves the file aside.
const (
	cleanSuffix = ".clean"
	bootSuffix  = ".boot"
)

// bootID returns the kernel's boot id, or "" where there is none (then every
// unclean stop is treated as a possible power loss).
var bootID = func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func openChecked(cfg Config, logger *slog.Logger) (*bolt.DB, error) {
	st, statErr := os.Stat(cfg.Path)
	exists := statErr == nil
	if !cfg.NoSync {
		if exists {
			if err := check(cfg.Path, st.Size(), false); err != nil {
				return nil, refuse(cfg.Path, err)
			}
		}
		return openDamaged(cfg.Path, false)
	}
	marker, bootFile := cfg.Path+cleanSuffix, cfg.Path+bootSuffix
	_, markerErr := os.Stat(marker)
	clean := markerErr == nil
	lastBoot, _ := os.ReadFile(bootFile)
	now := bootID()
	sameBoot := now != "" && strings.TrimSpace(string(lastBoot)) == now
	switch {
	case !exists:
	case !clean && !sameBoot:
		if err := moveAside(cfg.Path, logger, "state machine file was not closed cleanly before a reboot"); err != nil {
			return nil, err
		}
	default:
		err := check(cfg.Path, st.Size(), !clean)
		var d *boltcheck.Damage
		switch {
		case errors.As(err, &d) && !clean:
			if err := moveAside(cfg.Path, logger, "state machine file was not closed cleanly and is damaged ("+d.Problem+")"); err != nil {
				return nil, err
			}
		case err != nil:
			// The marker stays: a restart refuses again, the same way.
			return nil, refuse(cfg.Path, err)
		}
	}
	if err := os.Remove(marker); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("fsm: %w", err)
	}
	if err := writeFileSync(bootFile, strings.NewReader(now+"\n")); err != nil {
		return nil, fmt.Errorf("fsm: %w", err)
	}
	return openDamaged(cfg.Path, true)
}

// check runs boltcheck on the data file: bbolt's consistency check too when
// always is set (a file not closed cleanly) or the file is small enough.
// The check reads the whole file in order first, so bbolt's open and load
// find its pages in the page cache.
func check(path string, size int64, always bool) error {
	return boltcheck.Check(path, always || size <= boltcheck.FullCheckMaxBytes)
}

// refuse turns a failed check into the error the node stops with: a damaged
// file is named with what is wrong and what to do.
func refuse(path string, err error) error {
	var d *boltcheck.Damage
	if errors.As(err, &d) {
		return fmt.Errorf("%s is damaged (%w): move it aside and restart; the node rebuilds it from its snapshot and the log", path, d)
	}
	return fmt.Errorf("fsm: check %s: %w", path, err)
}

// openDamaged opens the data file, naming it as damaged if bbolt panicked.
func openDamaged(path string, noSync bool) (*bolt.DB, error) {
	db, err := openDB(path, noSync)
	var d *boltcheck.Damage
	if errors.As(err, &d) {
		return nil, refuse(path, err)
	}
	return db, err
}

// moveAside renames the data file so that Open starts a new one, which
// raftstore fills from the newest snapshot and the Raft log.
func moveAside(path string, logger *slog.Logger, why string) error {
	aside := fmt.Sprintf("%s.unclean-%d", path, time.Now().UnixNano())
	logger.Warn(why+"; moving it aside and rebuilding from the snapshot and the Raft log", "path", path, "moved_to", aside)
	if err := os.Rename(path, aside); err != nil {
		return fmt.Errorf("fsm: move unclean file aside: %w", err)
	}
	return nil
}
