//go:build race

package token

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation budgets cannot hold.
const raceEnabled = true
