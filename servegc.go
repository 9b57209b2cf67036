package main

import "runtime/debug"

// serveGCPercent is the garbage collector's pace for `idemgate serve`
// unless the GOGC environment variable sets one: a heap may grow to 400%
// over what was live after the last collection, where Go's default is
// 100%. A node's live heap is small (the replay cache's bound, buffers,
// Raft's log cache), and most of what it allocates is short-lived: bbolt's
// in-memory copies of the pages each commit rewrites, on every node, and
// the request's own buffers. At Go's default the collector ran several
// times a second under load and took about a tenth of each node's CPU;
// at 400 it runs a quarter as often for the same work.
const serveGCPercent = 400

// setServeGC sets the collector's pace for serve and returns the percent
// in force (-1: off). A GOGC the operator set, whatever its value, was
// applied by the runtime at start and is left as it is.
func setServeGC(lookupEnv func(string) (string, bool)) int {
	if v, ok := lookupEnv("GOGC"); ok && v != "" {
		p := debug.SetGCPercent(100) // read it back: there is no getter
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(serveGCPercent)
	return serveGCPercent
}
