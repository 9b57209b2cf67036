package fsm

import (
	"os"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// TestSandboxHGetHugeTiming logs what a script's HGET of one field of a
// hash of 10^6 fields costs, given the hash whole (as sandboxes were)
// and given its header alone (as the Redis face gives it now), in the
// same run; no timed assertion. IDEMGATE_HUGE=1 runs it:
//
//	IDEMGATE_HUGE=1 go test -count=1 -run SandboxHGetHuge -v ./fsm
func TestSandboxHGetHugeTiming(t *testing.T) {
	if os.Getenv("IDEMGATE_HUGE") == "" {
		t.Skip("IDEMGATE_HUGE=1 runs it: 10^6 fields")
	}
	const n = 1_000_000
	h := newHarness(t)
	all := fields("f", n)
	for lo := 0; lo < n; lo += 1 << 15 {
		h.apply(*command.HashSetCommand([]byte("h"), pairsOf(all[lo:min(n, lo+1<<15)]), false))
	}
	hget := command.CollReadCommand([]byte("h"), false, command.ReadFields, [][]byte{[]byte("f999999")}, 0, 0, false)
	var reads elemReads
	base, elems := partBase(h, &reads)
	for _, mode := range []struct {
		name string
		sb   func() *Sandbox
	}{
		{"whole", func() *Sandbox { return NewSandbox(h.clock, wholeBase(h), nil) }},
		{"header alone", func() *Sandbox { return NewSandbox(h.clock, base, elems) }},
	} {
		start := time.Now()
		r, err := mode.sb().Apply(hget)
		if err != nil || r.Code != command.CodeOK {
			t.Fatalf("%s: %v, %+v", mode.name, err, r)
		}
		t.Logf("a script's HGET of one field of %d, given %s: %s", n, mode.name, time.Since(start))
	}
}
