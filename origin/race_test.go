//go:build race

package origin

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation budgets do not hold under -race.
const raceEnabled = true
