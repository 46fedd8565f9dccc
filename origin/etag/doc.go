// Package etag makes content validators: a strong entity tag that is a
// hash of a file's bytes, so that every origin holding the same bytes
// gives a CDN the same ETag whatever the copies' mtimes, and the extended
// attribute that keeps it with the file across restarts.
//
// # What it owns
//
//   - The hash ([Sum]): XXH3-128 (github.com/zeebo/xxh3) of every byte, read
//     with pread. XXH3 runs at memory speed (tens of GB/s with AVX2 here,
//     against a few hundred MB/s for crypto/sha256 on the same cores, see
//     docs/benchmarks.md), so hashing costs what reading the file costs;
//     128 bits make an accidental collision across a library negligible.
//     It is not a cryptographic hash: whoever can write to the media root
//     can serve any bytes anyway.
//   - The attribute ([Attr], user.segorigin.etag): its format
//     ([FormatAttr], [ParseAttr]; pure, fuzzed) and its reading and
//     writing on an open descriptor ([Load], [Store]).
//
// # What it never does
//
//   - It never decides when to hash or where (the caller runs [Sum] off
//     the request path), never caches, never knows HTTP.
//   - It never trusts an attribute for another version of the file.
//
// # The rules it keeps
//
//  1. A tag describes one version of a file: its size, mtime and ctime.
//     An attribute is valid only when size and mtime are the same, and
//     ctime is either the version's own or the one the attribute's own
//     write left: writing an extended attribute moves ctime (it cannot be
//     told apart from other changes), so the attribute records when it was
//     written, and a ctime within 20 ms of that is taken for the write
//     itself. Any later change of bytes or metadata moves ctime further
//     and the attribute is ignored (the file is hashed again: the same
//     bytes give the same tag). The one change it cannot see is a rewrite
//     that keeps the size and sets the mtime back (cp -p, rsync -t in
//     place) within those 20 ms of the attribute's write: the old tag
//     would then stand for the new bytes. Publishing by rename (a new
//     inode, no attribute) never meets it.
//  2. A file that changed while it was hashed (fstat before and after
//     differ) gets no tag ([ErrChanged]).
//  3. A file system without user extended attributes (ENOTSUP), or one
//     the process may not write (EPERM, EACCES, EROFS), is reported by
//     [Store] as [ErrNoAttr]: the tag is still good, kept by the caller in
//     memory only.
package etag
