// Package publish decides whether a file under the media root is still
// being written, so that the origin never hands a cache a partial file
// under a long-lived Cache-Control.
//
// # What it owns
//
//   - The settle rule ([Rule.InProgress]): a file is in progress while its
//     last write, as the file system dates it (mtime or ctime, whichever is
//     later) or as the watcher saw it ([Writes]), is less than the settle
//     period old. Its size says nothing: an empty file is served as one.
//   - [Writes]: the names the watcher saw written lately and when, bounded
//     in count, forgotten once settled.
//
// # What it never does
//
//   - No I/O and no clock reads: the caller passes the file's dates and
//     now. It never decides what is answered, only whether the bytes are
//     complete.
//   - It never starts goroutines and holds no package-level state.
//
// # The rules it keeps
//
//  1. ctime counts as a write: a copy that restores the source's mtime
//     after writing (cp -p, rsync without --inplace's temporary, rsync -t
//     in place) still moves ctime, which cannot be set back.
//  2. An mtime in the future (touch -d, a restored archive) is not a
//     write: setting it moved ctime, which the rule reads. A ctime in the
//     future (a network file system's clock ahead of this one) is in
//     progress until now passes it by the settle period: it cannot be
//     told from a write happening now.
//  3. Settle 0 turns the date rule off.
//  4. A name the watcher saw written stays in progress for the settle
//     period after the event even if the file's dates say otherwise (a
//     network file system's clock may lag the origin's).
package publish
