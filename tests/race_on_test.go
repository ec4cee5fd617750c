//go:build race

package tests

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts vary from run to run.
const raceEnabled = true
