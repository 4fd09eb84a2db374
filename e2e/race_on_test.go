//go:build race

package e2e

// raceEnabled says that the tests run under the race detector; aegis is
// then built with it too.
const raceEnabled = true
