package fsm

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/boltcheck"
)

func fillFSM(t *testing.T, path string) {
	t.Helper()
	f, err := Open(Config{Path: path, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, f: f, clock: 1}
	for i := 0; i < 300; i++ {
		h.apply(command.Command{Type: command.TypeKVSet, Key: []byte{byte(i), byte(i >> 8)}, Value: make([]byte, 300)})
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestUncleanStopKeepsIntactFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fsm.db")
	fillFSM(t, path)
	os.Remove(path + cleanSuffix) // as if killed: no marker
	f, err := Open(Config{Path: path, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.AppliedIndex() != 300 {
		t.Fatalf("applied after unclean stop of an intact file = %d, want 300", f.AppliedIndex())
	}
}

func TestUncleanStopAcrossRebootRebuilds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fsm.db")
	fillFSM(t, path)
	os.Remove(path + cleanSuffix)
	// A torn file, as a power loss could leave it: it must not even be opened.
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteAt(make([]byte, 4*4096), 4*4096)
	fh.Close()
	saved := bootID
	bootID = func() string { return "another-boot" }
	defer func() { bootID = saved }()

	f, err := Open(Config{Path: path, NoSync: true})
	if err != nil {
		t.Fatalf("Open after an unclean stop across a reboot = %v, want a fresh file", err)
	}
	defer f.Close()
	if f.AppliedIndex() != 0 {
		t.Fatalf("applied after rebuild = %d, want 0 (rebuilt from snapshot and log)", f.AppliedIndex())
	}
	if _, err := f.KV([]byte{1, 0}, time.Unix(0, 1)); !errors.Is(err, command.ErrNotFound) {
		t.Fatalf("KV from the unclean file = %v", err)
	}
	if aside, _ := filepath.Glob(path + ".unclean-*"); len(aside) != 1 {
		t.Fatalf("unclean file not kept aside: %v", aside)
	}
}

func TestCleanCloseMarker(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fsm.db")
	fillFSM(t, path)
	if _, err := os.Stat(path + cleanSuffix); err != nil {
		t.Fatalf("no clean marker after Close: %v", err)
	}
	f, err := Open(Config{Path: path, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + cleanSuffix); !os.IsNotExist(err) {
		t.Fatalf("marker still present while open: %v", err)
	}
	f.Close()
}

// TestFreelistWrittenAtClose: Close leaves the free list in the file, so the
// next Open reads it instead of walking every page; the first commit of an
// open file marks it unsynced again, so a file left by a crash has none to
// trust, and opens all the same (bbolt rebuilds it).
func TestFreelistWrittenAtClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fsm.db")
	fillFSM(t, path)
	if !syncedFreelist(t, path) {
		t.Fatal("no free list in the file after Close")
	}
	f, err := Open(Config{Path: path, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, f: f, index: 300, clock: 2}
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("after"), Value: []byte("v")})
	if syncedFreelist(t, path) {
		t.Fatal("the free list still counts as synced after a commit")
	}
	f.db.Close() // a crash: no Close, no marker
	f.db = nil
	f, err = Open(Config{Path: path, NoSync: true})
	if err != nil {
		t.Fatalf("Open after a crash = %v", err)
	}
	defer f.Close()
	if f.AppliedIndex() != 301 {
		t.Fatalf("applied after a crash = %d, want 301", f.AppliedIndex())
	}
}

// syncedFreelist reads the file's current meta page (bbolt's layout: the
// one of pages 0 and 1 with the higher transaction id) and reports whether
// it names a free list page.
func syncedFreelist(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ne := binary.NativeEndian
	ps := int(ne.Uint32(b[16+8:]))
	m0, m1 := b[16:], b[ps+16:]
	m := m0
	if ne.Uint64(m1[48:]) > ne.Uint64(m0[48:]) {
		m = m1
	}
	return ne.Uint64(m[32:]) != ^uint64(0)
}

// TestOpenDamagedFile: a damaged data file (on which bbolt alone panics at
// open or at the first read, a SIGBUS on the truncated file, at every
// restart) is an error naming the file,
// what is wrong and what to do, never a panic or a fault; or, when its last
// stop was not clean, it is moved aside and rebuilt.
func TestOpenDamagedFile(t *testing.T) {
	saved := bootID
	bootID = func() string { return "this-boot" }
	defer func() { bootID = saved }()
	tests := []struct {
		name    string
		noSync  bool
		unclean bool // killed in this boot: no clean marker
		harm    func(string) error
		want    string // in the error; "" wants a rebuilt, empty file
	}{
		{"pages overwritten, closed cleanly", true, false, boltcheck.OverwritePages, "page "},
		{"truncated, closed cleanly", true, false, boltcheck.TruncateHalf, "truncated"},
		{"emptied, closed cleanly", true, false, func(p string) error { return os.Truncate(p, 0) }, "empty"},
		{"pages overwritten, fsynced file", false, false, boltcheck.OverwritePages, "page "},
		{"truncated, fsynced file", false, false, boltcheck.TruncateHalf, "truncated"},
		{"pages overwritten, not closed cleanly", true, true, boltcheck.OverwritePages, ""},
		{"truncated, not closed cleanly", true, true, boltcheck.TruncateHalf, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fsm.db")
			fillFSM(t, path)
			// fillFSM ran with NoSync: one Open with this test's setting
			// and a clean Close leave the markers as this setting would.
			f, err := Open(Config{Path: path, NoSync: tt.noSync})
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			if tt.unclean {
				os.Remove(path + cleanSuffix)
			}
			if err := tt.harm(path); err != nil {
				t.Fatal(err)
			}
			for attempt := 1; attempt <= 2; attempt++ { // a restart answers the same
				f, err := Open(Config{Path: path, NoSync: tt.noSync})
				if tt.want == "" {
					if err != nil {
						t.Fatalf("Open = %v, want the file moved aside and rebuilt", err)
					}
					if got := f.AppliedIndex(); got != 0 {
						t.Fatalf("applied = %d, want 0 (a new file, rebuilt from snapshot and log)", got)
					}
					if aside, _ := filepath.Glob(path + ".unclean-*"); len(aside) != 1 {
						t.Fatalf("damaged file kept aside as %v, want one", aside)
					}
					f.Close()
					return
				}
				if err == nil {
					f.Close()
					t.Fatalf("attempt %d: Open = nil, want an error", attempt)
				}
				for _, want := range []string{path + " is damaged (", tt.want, "): move it aside and restart; the node rebuilds it from its snapshot and the log"} {
					if !strings.Contains(err.Error(), want) {
						t.Fatalf("attempt %d: Open = %q, want it to say %q", attempt, err, want)
					}
				}
			}
			// What the message says to do works.
			if err := os.Rename(path, path+".damaged"); err != nil {
				t.Fatal(err)
			}
			f, err = Open(Config{Path: path, NoSync: tt.noSync})
			if err != nil {
				t.Fatalf("Open after moving the damaged file aside = %v", err)
			}
			f.Close()
		})
	}
}
