//go:build race

package conn_test

// raceEnabled: the race detector makes sync.Pool drop items at random and
// instruments crypto code, so allocation budgets do not hold under -race.
const raceEnabled = true
