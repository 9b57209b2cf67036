package fsm

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// With NoSync, the data file is as durable as the page cache. Two marker
// files beside it say whether it can be trusted on open:
//
//   - <path>.clean, written by Close after a final sync and removed by
//     Open: the last stop was clean.
//   - <path>.boot, written by Open: the kernel boot id of the run that had
//     the file open. After an unclean stop in the same boot (a process
//     crash, SIGKILL) the page cache kept every committed page, so the
//     file is consistent as of its last commit; Raft replays the rest.
//
// After an unclean stop across a reboot (power loss, kernel crash) pages
// may be torn or missing, and bbolt can panic in its own goroutines on such
// a file, so it is not opened at all: it is moved aside and the state is
// rebuilt from the newest snapshot and the Raft log, which were fsynced.
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
	if !cfg.NoSync {
		return openDB(cfg.Path, false)
	}
	marker, bootFile := cfg.Path+cleanSuffix, cfg.Path+bootSuffix
	_, statErr := os.Stat(cfg.Path)
	_, markerErr := os.Stat(marker)
	lastBoot, _ := os.ReadFile(bootFile)
	now := bootID()
	trusted := os.IsNotExist(statErr) || markerErr == nil || (now != "" && strings.TrimSpace(string(lastBoot)) == now)
	if err := os.Remove(marker); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("fsm: %w", err)
	}
	if !trusted {
		aside := fmt.Sprintf("%s.unclean-%d", cfg.Path, time.Now().UnixNano())
		logger.Warn("state machine file was not closed cleanly before a reboot; moving it aside and rebuilding from the snapshot and the Raft log",
			"path", cfg.Path, "moved_to", aside)
		if err := os.Rename(cfg.Path, aside); err != nil {
			return nil, fmt.Errorf("fsm: move unclean file aside: %w", err)
		}
	}
	if err := writeFileSync(bootFile, strings.NewReader(now+"\n")); err != nil {
		return nil, fmt.Errorf("fsm: %w", err)
	}
	return openDB(cfg.Path, true)
}
