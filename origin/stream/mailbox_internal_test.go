package stream

import (
	"slices"
	"testing"
)

// TestPostAfterEndRunsAtOnce: work posted to a connection whose goroutine
// has ended (closed while its request was parked) still runs: what was
// queued when it ended, then each later post at once, on the poster's
// goroutine, so a parked request woken as its client left finishes.
func TestPostAfterEndRunsAtOnce(t *testing.T) {
	m := mailbox{wake: make(chan struct{}, 1)}
	var got []int
	m.post(func() { got = append(got, 1) })
	if len(got) != 0 {
		t.Fatalf("ran %v before the goroutine took it", got)
	}
	m.end()
	m.post(func() { got = append(got, 2) })
	if want := []int{1, 2}; !slices.Equal(got, want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
}
