package fsm

import (
	"math/rand"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// TestStreamNodesAcrossCommits: the same log applied by state machines
// whose transactions commit at different entries (every entry, every 7,
// every 1000) ends in the same state. A trim of one stream empties
// bbolt leaves just after another stream's nodes; inside the open
// transaction a reverse walk stopped on them (Cursor.Prev's nil), the
// append missed its last node and opened another: 103, 26 and 517 nodes
// for the same 2,554 entries, replicas that disagree (stream_store.go's
// prev).
func TestStreamNodesAcrossCommits(t *testing.T) {
	hs := []*harness{newHarness(t), amortised(t, filepath.Join(t.TempDir(), "a.db"), 1000, time.Minute), amortised(t, filepath.Join(t.TempDir(), "b.db"), 7, time.Minute)}
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 400; round++ {
		n := 1 + rng.Intn(12)
		var cs []command.Command
		for i := 0; i < n; i++ {
			k := strconv.Itoa(rng.Intn(4))
			cs = append(cs, *command.XAddCommand([]byte("xagree:all"), command.XAddAuto, command.StreamID{}, [][]byte{[]byte("n"), []byte(k), []byte("i"), []byte(strconv.Itoa(round))}, command.StreamTrim{}, false))
			cs = append(cs, *command.XAddCommand([]byte("xagree:trim"), command.XAddAuto, command.StreamID{}, [][]byte{[]byte("k"), []byte(k)}, command.StreamTrim{Strategy: command.TrimMaxLen, Approx: true, MaxLen: 150, Limit: 0}, false))
		}
		for _, h := range hs {
			h.applyBatch(cs...)
			h.advance(time.Millisecond)
		}
	}
	var first [32]byte
	for i, h := range hs {
		hd, _ := xread(h, "xagree:all")
		ht, _ := xread(h, "xagree:trim")
		s, _ := h.f.stateHash()
		t.Logf("commits %d: all count %d nodes %d; trim count %d nodes %d; %x", i, hd.Count, hd.Nodes, ht.Count, ht.Nodes, s[:6])
		if i > 0 && s != first {
			t.Errorf("harness %d differs", i)
		}
		first = s
	}
}
