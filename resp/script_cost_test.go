package resp

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/idemgate/idemgate/script"
)

// heapHeld is the heap's live bytes after two collections.
func heapHeld() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestScriptCostEstimate: for sources of one shape repeated, the cache's
// estimate of a compiled script is at least the heap its compiling
// grows by (the source's copy included, as the cache keeps one) and at
// most 4 times it. -v logs each shape's figures.
func TestScriptCostEstimate(t *testing.T) {
	shapes := []struct {
		name         string
		open, repeat string
		close        string
		size         int
	}{
		{"assignments", "", "x=%d ", "", 128 << 10},
		{"comparisons", "", "x=a<b ", "", 128 << 10},
		{"calls", "", "redis.call('set',KEYS[1],ARGV[1]) ", "", 128 << 10},
		{"global calls", "", "f() ", "", 128 << 10},
		{"for loops", "", "for i=1,2 do end ", "", 128 << 10},
		{"while loops", "", "while x do end ", "", 128 << 10},
		{"ifs", "", "if x then y=1 end ", "", 128 << 10},
		{"and/or", "", "x=a or b and c ", "", 128 << 10},
		{"concatenations", "", "x=a..b..c ", "", 128 << 10},
		{"index chains", "", "x=t[1][2][3] ", "", 128 << 10},
		{"string constants", "", "x='%d' ", "", 128 << 10},
		{"number constants", "", "x=%d.5 ", "", 128 << 10},
		{"locals in functions", "", "f=function() local a, b = 1, 2 return a + b end ", "", 16 << 10},
		{"table of numbers", "return {", "1,", "}", 128 << 10},
		{"table of strings", "return {", "'s%d',", "}", 128 << 10},
		{"nested tables", "return {", "{{{{{{{{{{}}}}}}}}}},", "}", 128 << 10},
		{"a long string", "return '", "xxxxxxxxxxxxxxxx", "'", 1 << 20},
		{"a long bracket string", "return [==[", "xxxxxxxxxxxxxxxx", "]==]", 1 << 20},
		{"functions", "", "f=function() end ", "", 16 << 10},
		{"closures", "local a = 1 ", "f=function() return a end ", "", 16 << 10},
		{"comments", "", "-- a comment, to the end of its line\n", "return 1", 128 << 10},
		{"long comments", "", "--[[ a long\ncomment ]] ", "return 1", 128 << 10},
	}
	for _, sh := range shapes {
		var b strings.Builder
		b.WriteString(sh.open)
		for i := 0; b.Len() < sh.size; i++ {
			if strings.Contains(sh.repeat, "%d") {
				fmt.Fprintf(&b, sh.repeat, i)
			} else {
				b.WriteString(sh.repeat)
			}
		}
		b.WriteString(sh.close)
		src := []byte(b.String())
		before := heapHeld()
		s, err := script.Compile(append([]byte(nil), src...))
		if err != nil {
			t.Fatalf("%s: %v", sh.name, err)
		}
		grown := heapHeld() - before
		runtime.KeepAlive(s)
		est := scriptCost(src)
		t.Logf("%-22s source %8d  heap held %10d (%5.1f per byte)  estimate %10d (%.2f of it)",
			sh.name, len(src), grown, float64(grown)/float64(len(src)), est, float64(est)/float64(grown))
		if est < grown || est > 4*grown {
			t.Errorf("%s: estimate %d for a compiled %d bytes of source that holds %d: want within [1, 4] times it", sh.name, est, len(src), grown)
		}
	}
}
