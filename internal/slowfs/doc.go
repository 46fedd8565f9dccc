// Package slowfs is the test rig for cold storage: it mounts a directory
// through FUSE (github.com/hanwen/go-fuse/v2, loopback) so that every read
// that misses the page cache reaches this process, where it can be delayed
// by a fixed latency or held at a gate the test opens. A held read is a
// disk that does not answer: the test decides when it answers, so "sendfile
// never waits for a disk" is proved by behaviour, never by timing.
//
// # What it owns
//
//   - The mount, from [Mount] to [FS.Close] (unmounted on Close, and by
//     t.Cleanup in [MountT]).
//   - The read gate ([FS.Hold], [FS.Open]), the per-read delay, and counts
//     of reads served and held.
//   - The open gate ([FS.HoldOpens], [FS.ReleaseOpens]): opens that hang,
//     as on a network file system whose server went away.
//   - [Evict]: posix_fadvise(DONTNEED) of a file, so a test can make it cold
//     again without remounting.
//
// Only file reads (and, while the open gate is held, opens) are slowed:
// lookups and attributes answer at once, and the kernel keeps the page
// cache across opens (FOPEN_KEEP_CACHE), so a page once read is a hit
// until evicted, as on a local disk.
//
// # What it never does
//
//   - It never writes through the mount (the tests write the backing
//     directory before mounting or through it unslowed) and never mounts
//     anywhere but the directory it is given.
//   - No package-level mutable state.
//
// Mounting needs /dev/fuse and either root (go-fuse calls mount(2) itself)
// or fusermount3 (Debian's fuse3, installed by .ci/deps). Where neither
// works, [MountT] skips the test and says why.
package slowfs
