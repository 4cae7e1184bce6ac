//go:build race

package inject

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts are only asserted without it.
const raceEnabled = true
