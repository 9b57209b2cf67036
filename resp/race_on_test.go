//go:build race

package resp

// raceDetector: the tests run under the race detector, which slows every
// goroutine several times over.
const raceDetector = true
