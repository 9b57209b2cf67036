package resp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestScriptCacheHeap: 18 SCRIPT LOADs of 4 MiB scripts (just under the
// largest argument), of three shapes, hold no more heap than the cache's
// default bound and some slack (64 MiB counted; at most 160 MiB grown):
// dense code is refused for its compiled size, a long comment or string
// is kept until the cache is full. It logs the heap before and after
// each shape (-v). Before the cache counted compiled sizes it kept 16 of
// the dense ones, most of a GiB.
func TestScriptCacheHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles 72 MiB of scripts")
	}
	srv := startServer(t, memstore.New(t), "mem", nil)
	for _, shape := range []struct{ name, open, repeat, close string }{
		{"dense code", "", "x=1 ", "return 1"},
		{"a long comment", "return 1 --", "xxxx", ""},
		{"a long string", "return #'", "yyyy", "'"},
	} {
		before := heapHeld()
		refused := 0
		for i := range 18 {
			body := fmt.Sprintf("%s%s--%d\n%s", shape.open, strings.Repeat(shape.repeat, (4<<20-1024)/len(shape.repeat)), i, shape.close)
			if shape.name == "a long comment" || shape.name == "a long string" {
				body = fmt.Sprintf("%s%d%s%s", shape.open, i, strings.Repeat(shape.repeat, (4<<20-1024)/len(shape.repeat)), shape.close)
			}
			c := dialRaw(t, srv.Addr())
			c.send(array("SCRIPT", "LOAD", body))
			if r := c.replies(1)[0]; !strings.HasPrefix(r, "$40\r\n") {
				refused++
			}
		}
		grown := heapHeld() - before
		t.Logf("%-15s 18 × 4 MiB SCRIPT LOAD: %d refused; heap held %d MiB before, %d MiB after (grew %d MiB)",
			shape.name, refused, before>>20, (before+grown)>>20, grown>>20)
		if grown > 160<<20 {
			t.Errorf("%s: heap grew %d MiB over 18 loads of 4 MiB, want at most 160", shape.name, grown>>20)
		}
		srv.scripts.flush()
	}
}
