// Package testwait is the one way this module's tests wait for a
// condition: a counter to move, a state to change, a goroutine to end.
// Counters move after the last byte is handed to the kernel, which may be
// after a client has read it, and events arrive on their own goroutines,
// so tests wait on what they check rather than sleep for a guessed time.
// It is imported only by tests.
package testwait

import (
	"testing"
	"time"
)

// For polls cond until it holds, or fails the test when d passes first.
// It polls every millisecond at first and every 10 ms after the first
// 10, so a condition that is quick to come true costs little and a slow
// one (an HTTP request per poll) does not spin.
func For(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for i := 0; !cond(); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		if i < 10 {
			time.Sleep(time.Millisecond)
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
}
