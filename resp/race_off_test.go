//go:build !race

package resp

const raceDetector = false
