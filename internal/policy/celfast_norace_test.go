//go:build !race

package policy

// raceEnabled says that the tests run under the race detector.
const raceEnabled = false
