//go:build linux

package loop

import (
	"runtime"
	"runtime/metrics"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"segorigin/origin/coldread"
)

// When a loop waits, parks and yields, and how its thread makes the
// system calls of a wake-up.
//
// Go's sysmon thread sleeps for good while every P is idle, and the
// first system call the runtime sees after that (entersyscall) wakes it
// back to polling every 20 µs for a millisecond and more. A loop that
// parked between sparse events and then made its read, sendmsg and
// sendfile as ordinary system calls woke sysmon for every event: tens
// of thread wake-ups per segment sent, more than the send itself. So
// the calls a loop makes on a wake-up are raw: sockets that never
// block, epoll, and sendfile of a window in the page cache. None of them
// waits on storage or on a peer, so the runtime loses nothing by not
// seeing them; a sendfile that may read from storage stays an ordinary
// system call, which sysmon can take the P from.
//
// With those, a loop parks on Go's netpoller as soon as it has nothing
// to do: a gap between sparse events (paced players asking every few
// seconds) costs one wake-up of the netpoller's thread and no CPU while
// it lasts. Where its parks end within parkAfter (back-to-back requests
// on a keep-alive connection) it waits parkAfter in epoll_wait first, as
// a raw system call keeping its P: one epoll_wait a request, no park.

// activeWait is the longest a loop waits in epoll_wait at a time while
// it keeps its P (ms); it wakes sooner to yield (yieldEvery), so that it
// yields at least every 9 ms, before sysmon would preempt it.
const activeWait = 9

// parkAfter is how long a loop with nothing to do keeps its P, waiting
// in epoll_wait, before it parks on Go's netpoller.
const parkAfter = time.Millisecond

// yieldEvery is how often a loop that has not parked yields its P
// though no goroutine waits for one: just often enough that sysmon,
// which preempts a goroutine it has seen running for 10 ms, never does.
// Each yield costs more than the loop's own Gosched: with a P idle (the
// other loop parked), the runtime wakes a thread for it, which finds
// nothing and sleeps again (a futex wake and wait, nanosleeps while it
// spins): at 5 ms that was 0.07 system calls a request for sequential
// keep-alive clients.
const yieldEvery = 8 * time.Millisecond

// waitersEvery is how often a loop that has not parked asks the runtime
// whether goroutines wait for a P (a cold reader back from storage, an
// HTTPS connection's goroutine), and yields at once if they do:
// otherwise they would wait for yieldEvery.
const waitersEvery = time.Millisecond

// waitClock is what the wait policy remembers between wake-ups.
type waitClock struct {
	lastYield, lastEvent int64 // Unix ns
	lastAsked            int64 // Unix ns: when waiters was last read
	// runnable reads the runtime's count of goroutines waiting for a P.
	runnable [1]metrics.Sample
	// window: wait parkAfter before parking. Off once a park outlasted
	// parkAfter (sparse events: the window would only add a wake-up per
	// event), on again once one did not.
	window bool
}

// newWaitClock is the wait policy's memory for a loop, at now.
func newWaitClock(now int64) waitClock {
	wc := waitClock{lastYield: now, lastEvent: now, lastAsked: now, window: true}
	wc.runnable[0].Name = runnableMetric
	return wc
}

// nextEvents yields if it is time to, then waits for events: in
// epoll_wait while a deadline comes within activeWait or, with the
// window on, the loop had an event within parkAfter; on Go's netpoller
// otherwise. It sets l.now.
func (l *loop) nextEvents(events []unix.EpollEvent, wc *waitClock) (n int, err error) {
	if l.handedOff || l.now-wc.lastYield > int64(yieldEvery) || wc.waiters(l.now) {
		// A goroutine that never yields looks stuck to the runtime's
		// sysmon (system calls do not count), which then preempts it
		// with a signal every 10 ms.
		runtime.Gosched()
		wc.lastYield, wc.lastAsked, l.handedOff = l.now, l.now, false
	}
	wait := l.waitMillis()
	if wait < 0 || wait > activeWait {
		left := int64(parkAfter) - (l.now - wc.lastEvent)
		if !wc.window || left <= 0 {
			parked := l.now
			l.e.stats.Parks.Add(1)
			n, err = l.p.park(events, l.nextDeadline(), l.now)
			l.now = time.Now().UnixNano()
			wc.lastYield = l.now // parked: its P ran whatever else was waiting
			if n > 0 {
				wc.lastEvent = l.now
				wc.window = l.now-parked < int64(parkAfter)
			}
			return n, err
		}
		wait = int(min((left+int64(time.Millisecond)-1)/int64(time.Millisecond), activeWait))
	}
	// Wake in time to yield: a loop blocked in a raw epoll_wait still
	// holds its P, and sysmon counts that as running.
	wait = min(wait, int(max(wc.lastYield+int64(yieldEvery)-l.now, 0)/int64(time.Millisecond))+1)
	n, err = l.p.wait(events, wait)
	l.now = time.Now().UnixNano()
	if n > 0 {
		wc.lastEvent = l.now
	}
	return n, err
}

// runnableMetric counts the goroutines ready to run that wait for a P
// (Go 1.26): reading it locks the scheduler for about 50 ns.
const runnableMetric = "/sched/goroutines/runnable:goroutines"

// waiters reports, at most every waitersEvery, whether goroutines wait
// for a P.
func (wc *waitClock) waiters(now int64) bool {
	if now-wc.lastAsked < int64(waitersEvery) {
		return false
	}
	wc.lastAsked = now
	metrics.Read(wc.runnable[:])
	v := wc.runnable[0].Value
	return v.Kind() == metrics.KindUint64 && v.Uint64() > 0
}

// rawRead is read(2) on a descriptor that never blocks (a non-blocking
// socket, the eventfd), as a raw system call.
func rawRead(fd int, p []byte) (int, error) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(ptr), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// residency is what sendfile knows of a window's pages before it sends.
type residency uint8

const (
	noCheck       residency = iota // no Ready hook: nothing known, nothing asked
	checkFirst                     // the Ready hook passed it: ask the page cache once more
	knownResident                  // the Ready hook found it resident just now
)

// sendfile is sendfile(2) from in at *off to the non-blocking socket
// out. A window the Ready hook passed (checkFirst) is asked of the page
// cache once more here (cachestat, under a microsecond) and, all of it
// resident, sent by a raw system call, which then copies from memory
// only; one the hook itself found resident in this wake-up
// (knownResident) is sent raw without asking twice. Otherwise (evicted
// since the hook, or not checked) it is an ordinary system call, so
// that a read from storage never holds the P (nor a stop of the world)
// while it waits.
func sendfile(out, in int, off *int64, n int, check residency) (int, error) {
	resident := check == knownResident
	if check == checkFirst {
		ok, err := coldread.Resident(in, *off, int64(n), *off+int64(n))
		resident = err == nil && ok
	}
	if resident {
		r, _, e := unix.RawSyscall6(unix.SYS_SENDFILE, uintptr(out), uintptr(in), uintptr(unsafe.Pointer(off)), uintptr(n), 0, 0)
		if e != 0 {
			return 0, e
		}
		return int(r), nil
	}
	return unix.Sendfile(out, in, off, n)
}

// rawEpollCtl is epoll_ctl(2) as a raw system call.
func rawEpollCtl(epfd, op, fd int, ev *unix.EpollEvent) error {
	_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
