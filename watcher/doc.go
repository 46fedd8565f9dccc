// Package watcher turns file system events under the media root into cache
// invalidations, so a cached descriptor is never served after its path
// changed.
//
// # What it owns
//
//   - One fsnotify watcher with a watch on the media root and on every
//     directory below it. fsnotify is not recursive: the package adds a watch
//     for each directory that appears (created, or renamed in) and drops the
//     watches of each directory that goes.
//   - The mapping from events to calls on an [Invalidator]: names are slash
//     paths relative to the root without a leading slash ("a/b/seg1.m4s"),
//     the same keys as package cache.
//   - The degraded state: whether the watch set is known to be incomplete,
//     reported through [Config.OnDegraded] and [Stats].
//
// # What it never does
//
//   - It never opens, reads or caches files, and never decides what is
//     served: it only says which names may have changed.
//   - It never watches files, only directories (a watch on a file holds the
//     inode, and its delete event waits for every descriptor to close).
//   - It never follows symbolic links below the root: a symlink's target
//     is not watched through it, so a file changed in place behind a
//     symlinked directory is not seen under the link's names. The link
//     itself is a name in a watched directory: made, removed or renamed
//     over (a release swapped by "ln -s" and "mv -T"), it invalidates
//     everything under its name (rule 7). A root that is itself a symlink
//     is resolved by New, and again on [Watcher.Reroot] and on each
//     retry while degraded.
//   - It never starts a goroutine of its own: [Watcher.Run] is the only
//     loop, the caller owns the goroutine that runs it, and fsnotify's reader
//     goroutine ends when Run returns (or when Close is called on a watcher
//     that never ran).
//
// # The rules it keeps
//
//  1. Write, Create, Remove, Rename and Chmod of a file invalidate its name.
//     An atomic replace by rename ("RENAME tmp", "CREATE name") invalidates
//     both names.
//  2. Remove or Rename of a watched directory drops the watches at and below
//     it (the kernel keeps watching a moved directory under its old name in
//     fsnotify's books) and invalidates its prefix.
//  3. A directory that appears is watched first and scanned second, and every
//     name found is invalidated (negative entries included): files created
//     before the watch existed gave no event, and files created after it
//     give one, so nothing falls between.
//  4. Lost events make the watch set untrustworthy: on fsnotify's
//     ErrEventOverflow, on ENOSPC from inotify_add_watch (max_user_watches),
//     on any other error adding a watch or reading events, and when the root
//     itself goes, the watcher invalidates everything, calls
//     OnDegraded(true) and logs once. While degraded it rebuilds the full
//     watch set every RetryEvery; once whole it invalidates everything again
//     (changes in the gap were not seen) and calls OnDegraded(false).
//  5. A write to a file is also reported to [Config.OnWrite], so the
//     caller can hold back a file still being written. fsnotify reports
//     writes (IN_MODIFY) but keeps IN_CLOSE_WRITE to itself (its
//     xUnportableCloseWrite is unexported), so the end of a write is not
//     an event here: the caller judges it by time (a write seen, or the
//     file's mtime or ctime, less than a settle period ago).
//  6. Events are handled one at a time on Run's goroutine, in the order
//     fsnotify delivers them; the directory set needs no lock.
//  7. A symlink below the root (known from the walk or from its creation)
//     that is made, removed or renamed invalidates its prefix: every name
//     below a symlinked directory was reached through the link.
//  8. Reroot resolves the root's path again; if it names another
//     directory, the watches of the old tree are dropped, the new tree is
//     watched, then everything is invalidated (rule 3's order, for the
//     whole root). Events still queued from the old tree fall outside the
//     new root's prefix and are ignored.
package watcher
