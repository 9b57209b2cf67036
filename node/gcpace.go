package node

import (
	"os"
	"runtime/debug"
)

// CollectorPace is the pace (GOGC) at which a node runs Go's garbage
// collector unless the environment sets GOGC: a quarter as often as Go's
// default. A serving node's live heap is a few tens of megabytes, and most
// of what it allocates lives for one commit (bbolt's copies of the pages it
// writes), so at Go's default the collector ran several times a second and
// took about a tenth of each node's CPU; at this pace a write costs about a
// tenth less CPU, for a peak resident set 50-100 MB higher under load.
// The state machine's bulk work (a restore, an index build at open) holds
// live hundreds of megabytes for a while, and runs at Go's default pace
// whatever this is.
const CollectorPace = 400

// PaceCollector sets the process's collector to CollectorPace, unless the
// environment names a pace of its own (GOGC, which Go reads itself), and
// returns the pace in force.
func PaceCollector() int {
	if os.Getenv("GOGC") != "" {
		pace := debug.SetGCPercent(100)
		debug.SetGCPercent(pace)
		return pace
	}
	debug.SetGCPercent(CollectorPace)
	return CollectorPace
}
