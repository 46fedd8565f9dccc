package loop

import "sync/atomic"

// Counters count what an engine's loops did: declared once for
// C = atomic.Int64 (Stats, what the loops increment) and C = int64 (a
// snapshot of them). Not build-constrained, so that a server's snapshot
// has the same shape on every platform (all zero where no loop runs).
type Counters[C any] struct {
	Accepted   C // connections accepted
	Closed     C // connections closed
	Timeouts   C // connections closed by a read, idle or write timeout
	Wakeups    C // returns from the poller's wait (epoll_wait or io_uring_enter)
	Parks      C // waits an idle loop made on Go's netpoller
	Sends      C // sendmsg and sendfile calls
	ShortSends C // sends that filled the socket buffer (then wait for EPOLLOUT)
	// The io_uring poller's (Config.Poller): SQEs the kernel took,
	// completions reaped, io_uring_enter calls; and engines that asked
	// for auto and fell back to epoll because io_uring was refused.
	UringSubmissions, UringCompletions, UringEnters C
	PollerFallbacks                                 C
	// Requests' bytes the io_uring poller received in its ring (each a
	// read(2) the loop did not make), and receives that found every
	// buffer held (the loop then read the socket itself).
	UringReceives, UringNoBuffers C
	// Sends made in the io_uring poller's ring (counted in Sends too).
	UringSends C
}

// Stats are an engine's live counters.
type Stats = Counters[atomic.Int64]
