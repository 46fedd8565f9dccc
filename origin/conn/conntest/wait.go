package conntest

import (
	"testing"
	"time"
)

// WaitFor polls cond every 10ms until it holds, or fails the test when d
// passes first. Counters move after the last byte is handed to the
// kernel, which may be after a client has read it: tests wait for them.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
