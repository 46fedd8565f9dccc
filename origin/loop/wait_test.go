//go:build linux

package loop

import (
	"runtime"
	"testing"
	"time"
)

// TestWaitersSeesAGoroutineWaitingForAP: with one P, held by the test, a
// goroutine just started waits for it, and waiters (asked after
// waitersEvery) says so; once it has run, waiters says nothing waits; and
// within waitersEvery of the last question it does not ask at all.
func TestWaitersSeesAGoroutineWaitingForAP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	// Let the runtime's and the test framework's own goroutines run
	// first, so that only this test's goroutine waits below.
	for range 10 {
		runtime.Gosched()
	}
	wc := newWaitClock(0)
	now := int64(waitersEvery) // the first question: a full interval since 0

	ran := make(chan struct{})
	go func() { close(ran) }() // runnable, and the one P is the test's
	if !wc.waiters(now) {
		t.Fatal("waiters = false with a goroutine waiting for the only P")
	}
	if wc.waiters(now + int64(waitersEvery) - 1) {
		t.Error("waiters asked again within waitersEvery")
	}

	runtime.Gosched()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the goroutine did not run after the yield")
	}
	// A runtime goroutine (a timer's, the GC's) may be ready at any
	// moment: nothing waiting has to be seen once in a few tries.
	for try := range 10 {
		runtime.Gosched()
		now += 2 * int64(waitersEvery)
		if !wc.waiters(now) {
			return
		}
		t.Logf("try %d: a goroutine waits", try)
	}
	t.Error("waiters = true in every try, with nothing of the test's waiting for the P")
}
