//go:build race

package policy

// raceEnabled says that the tests run under the race detector, which makes
// cel-go's evaluations many times slower: the differential tests do less.
const raceEnabled = true
