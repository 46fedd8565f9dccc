// Package coldread keeps blocking storage reads off the request path.
//
// A sendfile(2) of a page that is not in the page cache waits inside the
// kernel until the storage answers, and in Go that wait holds an OS thread:
// a burst of cold requests grows the thread count without bound (the
// runtime aborts at 10,000) and a hot request queued behind them waits. The
// answer, like nginx's "aio threads", is a small fixed set of reader
// goroutines that are the only place a read may block; a request whose
// bytes are not resident parks (a goroutine, not a thread) until a reader
// has made them resident, then sends them from memory.
//
// # What it owns
//
//   - [Pool]: the policy. A fixed number of reader goroutines, a bounded
//     demand queue (full: [ErrBusy]), a per-wait deadline ([ErrDeadline]),
//     one read per key however many requests wait for it, and a second,
//     lower class of background work (read-ahead) that only some readers
//     take and that is dropped, never queued without bound, when they are
//     busy. The pool runs functions; it does no I/O of its own but for
//     [Pool.Load] and knows no file, so it is tested without a disk.
//   - [Resident] and [Pool.Load] (resident_linux.go): the I/O. Resident asks
//     the kernel with cachestat(2) (Linux 6.5+; one syscall, exact for the
//     whole range, about 0.2-0.35 µs here) whether every page of a range is
//     cached, falling back to preadv2(RWF_NOWAIT) of the range's first and
//     last byte on older kernels. Load makes a range resident by sendfile(2)
//     to /dev/null, so the bytes are read into the page cache and never
//     copied to userspace: it blocks, so it belongs on a pool reader. The
//     pool holds the one /dev/null descriptor while Run runs (where there
//     is none, a chroot without it, Load reads through a buffer, logged).
//
// # What it never does
//
//   - It never blocks a caller longer than [Config.Deadline], never starts
//     a goroutine outside [Pool.Run], and never keeps more than
//     [Config.Queue] demand jobs or [Config.BackgroundQueue] background jobs
//     waiting.
//   - It never decides what to read ahead: the caller predicts (package
//     predict) and submits.
//   - No package-level mutable state.
package coldread
