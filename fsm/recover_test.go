package fsm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func fillFSM(t *testing.T, path string) {
	t.Helper()
	f, err := Open(Config{Path: path, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, f: f, clock: 1}
	for i := 0; i < 300; i++ {
		h.apply(Command{Type: TypeKVSet, Key: []byte{byte(i), byte(i >> 8)}, Value: make([]byte, 200)})
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
	if _, err := f.KV([]byte{1, 0}, time.Unix(0, 1)); !errors.Is(err, ErrNotFound) {
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
