// Package cache keeps media files open between requests: a bounded LRU from
// a cleaned slash path relative to the media root ("hls/ts/seg1.ts", no
// leading slash) to an open file with its size, mtime, inode and ETag.
//
// # What it owns
//
//   - Every file descriptor it opens, from Open until the last reference is
//     released. A [Handle] returned by [Cache.Acquire] is a loan: the caller
//     must call [Handle.Release] exactly once, and must not Close the file.
//   - The validators of a file as it was when opened: Size, ModTime and ETag
//     come from one fstat of the open descriptor, so they always describe the
//     bytes that descriptor reads (a file replaced by rename is served wholly
//     old or wholly new).
//   - A validator of the bytes the caller computed once ([Handle.SetContent]:
//     a hash), kept with the Handle and dropped with it, so it is computed
//     once per version of a file. The cache never computes it.
//   - Short-lived negative entries: a name that did not exist is remembered
//     for [Config.NegativeTTL].
//   - The bytes of small files ([Config.InlineMax], within
//     [Config.InlineBudget]): read once right after the open, carried by the
//     same Handle as the descriptor ([Handle.Bytes]) and dropped with it.
//
// # What it never does
//
//   - It never resolves, cleans or confines paths: [Config.Open] and
//     [Config.Stat] belong to the caller, which enforces the root and the
//     symlink policy.
//   - It never closes a descriptor that a Handle still lends out, and never
//     closes one while holding its lock.
//   - It never touches a file's shared offset, and reads file content only
//     to inline a small file, once per open, with pread: callers use
//     Handle.Bytes, pread (File.ReadAt) or sendfile with an explicit offset.
//   - It never watches the file system. Staleness is ended from outside
//     ([Cache.Invalidate], fed by package watcher) or, when the watcher is off
//     or degraded, by revalidating entries with stat ([Config.Revalidate],
//     [Cache.SetRevalidate]).
//   - No goroutines, no package-level mutable state.
//
// # The rules it keeps
//
//  1. References. The cache holds one reference on each entry it lists;
//     Acquire adds one by compare-and-swap that refuses at zero (a zero count
//     means the descriptor is closed or closing: the lookup becomes a miss).
//     Eviction, invalidation and shedding unlist an entry at once; its
//     descriptor closes when the last reference goes, outside the lock.
//  2. golang-lru/v2's Add replaces an existing key without calling the
//     eviction callback, which would leak a descriptor, so an existing key is
//     removed before Add. The eviction callback only queues the entry; the
//     reference is dropped after the lock is released.
//  3. Concurrent misses for one name open the file once; the other callers
//     wait for that open (at most Config.WaitTimeout, then ErrWaitTimeout,
//     holding no reference) and share its result.
//  4. An invalidation that arrives while a miss is being opened marks that
//     open stale: its result still answers the callers that were waiting
//     (they asked before the change), but it is not cached. When it ends it
//     unlists the name again: a later open may have reached the path
//     before it did and hold an older file than the one it hands out.
//  5. Bounds: at most MaxFiles open entries and MaxFiles negative entries,
//     the latter also within NegativeBytes of names (clients choose them,
//     and a request line may be long), so open descriptors never exceed MaxFiles plus the references in
//     flight. On EMFILE or ENFILE the cache sheds its entries, retries the
//     open once, and otherwise returns the error (errors.Is works).
//  6. A hit takes the lock once, makes no system call and allocates nothing.
//     With revalidation on, an entry older than the period is checked by one
//     caller with stat(path) against the descriptor's dev, inode, size, mtime
//     and ctime; a difference drops the entry and the file is reopened.
//  7. MaxFiles == 0 disables caching: Acquire opens, Release closes.
//  8. ETag is strong and derived from size and mtime only ([ETag]), never the
//     inode, so origins holding copies of the same files agree on it.
//  9. Inline bytes describe the same file version as Size and ETag: they are
//     read after the fstat that made the Handle and kept only if a second
//     fstat shows the same size, mtime and ctime. They are never re-read:
//     a change is ended by whatever ends the descriptor (rule 1, rule 6).
//     The budget counts every inlined Handle alive, lent out ones included.
package cache
