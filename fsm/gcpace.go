package fsm

import (
	"runtime/debug"
	"sync"
)

// A node may run Go's collector at a slower pace than Go's default (serve
// does: see node.PaceCollector), which pays while the live heap is the few
// tens of megabytes of serving. A restore, or the scan index's build at
// open, holds a bounded transaction's pages and nodes live, hundreds of
// megabytes, and at a slow pace the collector lets the heap grow to several
// times that before it runs. Each holds the collector at Go's default pace
// while it runs; the pace is the process's, so the last of them to end puts
// back the one before the first.

// bulkPace is the collector's pace (GOGC) while bulk work runs.
const bulkPace = 100

var bulk struct {
	mu    sync.Mutex
	n     int // bulk operations running
	saved int // the pace before the first of them
}

// holdBulkPace holds the collector at bulkPace at most, until the returned
// func is called.
func holdBulkPace() func() {
	bulk.mu.Lock()
	defer bulk.mu.Unlock()
	if bulk.n == 0 {
		bulk.saved = debug.SetGCPercent(bulkPace)
		if bulk.saved < bulkPace { // already faster, or off (negative): as it was
			debug.SetGCPercent(bulk.saved)
		}
	}
	bulk.n++
	return func() {
		bulk.mu.Lock()
		defer bulk.mu.Unlock()
		if bulk.n--; bulk.n == 0 {
			debug.SetGCPercent(bulk.saved)
		}
	}
}
