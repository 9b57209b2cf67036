package bench

import (
	"runtime"
	"testing"
)

// TestParseDirty: the page cache's dirty bytes from /proc/meminfo texts,
// well formed and not.
func TestParseDirty(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       int64
	}{
		{"both", "MemTotal: 100 kB\nDirty:            150844 kB\nWriteback:             4 kB\n", (150844 + 4) << 10},
		{"dirty only", "Dirty: 1 kB\n", 1 << 10},
		{"none", "MemTotal: 100 kB\nWritebackTmp: 0 kB\n", -1},
		{"empty", "", -1},
		{"no unit", "Dirty: 12\n", -1},
		{"other unit", "Dirty: 12 MB\n", -1},
		{"not a number", "Dirty: twelve kB\n", -1},
		{"negative", "Dirty: -5 kB\n", -1},
		{"huge", "Dirty: 99999999999999999999 kB\n", -1},
		{"extra field", "Dirty: 5 kB x\n", -1},
	} {
		if got := parseDirty(tc.text); got != tc.want {
			t.Errorf("%s: parseDirty = %d, want %d", tc.name, got, tc.want)
		}
	}
	if runtime.GOOS == "linux" {
		if got := dirtyBytes(); got < 0 {
			t.Errorf("dirtyBytes on Linux = %d: /proc/meminfo did not read", got)
		}
	}
}
