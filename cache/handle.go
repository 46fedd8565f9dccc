package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrIsDir is returned (wrapped in an *fs.PathError) when the name is a
// directory. Directories are never cached.
var ErrIsDir = errors.New("cache: is a directory")

// ErrNotRegular is returned (wrapped in an *fs.PathError) when the name is
// neither a regular file nor a directory: a device, FIFO or socket is never
// served or cached.
var ErrNotRegular = errors.New("cache: not a regular file")

// Handle is an open file lent by [Cache.Acquire]. All fields are read-only
// and describe the file as it was when opened. Every caller that acquired the
// same cached file gets the same *Handle, so the descriptor and its offset
// are shared: never Read, Seek or Close File; use File.ReadAt (pread) or
// sendfile with an explicit offset on [Handle.Fd].
type Handle struct {
	Name    string    // the cleaned name it was opened by, the cache's own copy (safe to keep)
	File    *os.File  // shared descriptor; see the type comment
	Size    int64     // st_size at open
	ModTime time.Time // st_mtime at open
	ETag    string    // strong validator from Size and ModTime: ETag(Size, ModTime)
	// LastModified is ModTime as the IMF-fixdate a Last-Modified field
	// carries (RFC 9110 §5.6.7, §8.8.2), formatted once at open rather
	// than on every response.
	LastModified string
	Inode        uint64 // st_ino at open

	// Bytes is the whole file, read once right after the open when the
	// cache inlines small files (Config.InlineMax) and the budget allowed;
	// nil otherwise. Read-only, shared like File; valid until Release.
	Bytes []byte

	fd        int           // raw descriptor, read once at open through SyscallConn
	dev       uint64        // st_dev at open, compared on revalidation
	ctime     int64         // st_ctime at open (ns), compared after the inline read
	refs      atomic.Int32  // the cache's reference (while listed) plus one per Acquire not yet released
	checked   atomic.Int64  // Now().UnixNano() of the open or of the last revalidation
	openFiles *atomic.Int64 // the owning cache's count of open descriptors

	content atomic.Pointer[Content] // the caller's validator of these bytes, once known (SetContent)
	encoded atomic.Pointer[Encoded] // the caller's coding of these bytes, once made (SetEncoded)
	settled atomic.Int64            // the caller's SetSettled: when these bytes were last found final
	predict atomic.Int64            // the caller's SetPredicted: when it last predicted from these bytes
	parsed  atomic.Value            // the caller's parse of these bytes, once made (SetParsed)
	owner   *Cache                  // the cache that opened it: the budget Encoded bytes count against

	inlineBytes *atomic.Int64 // the owning cache's inline byte level, when Bytes != nil
	inlineFiles *atomic.Int64 // the owning cache's inline file level, when Bytes != nil
}

// Fd returns the raw descriptor of File, obtained once at open through
// SyscallConn().Control. Unlike os.File.Fd it does not switch the
// descriptor to blocking mode or stop deadlines from working. It is valid
// until Release; it must not be closed.
func (h *Handle) Fd() int { return h.fd }

// ChangeTime is st_ctime at open, in Unix nanoseconds (0 where the
// platform's stat does not give it): the last time the file's bytes or
// metadata changed, which, unlike the mtime, no writer can set back.
func (h *Handle) ChangeTime() int64 { return h.ctime }

// Content is a validator of a Handle's bytes that the caller computed (a
// hash of them) and keeps with the entry, so it is computed once per
// version of the file and dropped with the descriptor.
type Content struct {
	ETag string // strong entity tag of the bytes
	// Changed is the ctime (Unix nanoseconds) of the version that was
	// hashed, when the file's own ctime is later only because the
	// validator was stored on it (an extended attribute).
	Changed int64
}

// Content returns the validator SetContent gave this Handle, or nil.
func (h *Handle) Content() *Content { return h.content.Load() }

// SetContent keeps c with this Handle (every holder of the same Handle
// sees it). The caller computes c from this Handle's descriptor, so it
// describes the same version as Size and ModTime; the first one set stays.
func (h *Handle) SetContent(c *Content) { h.content.CompareAndSwap(nil, c) }

// Parsed returns what SetParsed kept with this Handle, or nil.
func (h *Handle) Parsed() any { return h.parsed.Load() }

// SetParsed keeps v, the caller's parse of this Handle's bytes (a
// playlist's), with it: every holder of the same Handle finds it without
// a lookup of its own. The first one set stays; v must not be nil and
// is always of one type.
func (h *Handle) SetParsed(v any) { h.parsed.CompareAndSwap(nil, v) }

// Settled returns the time SetSettled last recorded for this Handle, or 0.
func (h *Handle) Settled() int64 { return h.settled.Load() }

// SetSettled records that the caller found these bytes final at at (Unix
// nanoseconds, the caller's clock): no writer had the file open and it
// was still as opened. Every holder of the same Handle sees it; the
// cache never reads it.
func (h *Handle) SetSettled(at int64) { h.settled.Store(at) }

// Predicted returns the time SetPredicted last recorded, or 0.
func (h *Handle) Predicted() int64 { return h.predict.Load() }

// SetPredicted records that the caller predicted, at at (Unix
// nanoseconds, the caller's clock), what is asked for after these bytes
// (read-ahead). Every holder of the same Handle sees it; the cache never
// reads it.
func (h *Handle) SetPredicted(at int64) { h.predict.Store(at) }

// Retain adds a reference for a holder that outlives its lender (a job
// that goes on after the request that queued it stopped waiting); false
// when the descriptor is already closed or closing. A true Retain needs
// its own Release.
func (h *Handle) Retain() bool { return h.tryRef() }

// Release returns the reference taken by Acquire. Call it exactly once per
// successful Acquire, after the last use of File or Fd. The descriptor is
// closed here when the cache no longer lists the file and this was the last
// reference.
func (h *Handle) Release() {
	switch n := h.refs.Add(-1); {
	case n == 0:
		h.close()
	case n < 0:
		// The descriptor was already closed by the release that reached
		// zero; a caller released twice, and may have read through a
		// descriptor number that now belongs to another file.
		panic("cache: Handle released more times than acquired")
	}
}

// tryRef adds a reference unless the count is zero, and reports whether it
// did. A zero count means the descriptor is closed or being closed and its
// number may already belong to another file; an unconditional increment
// would resurrect it. The interleaving it prevents:
//
//  1. G1 looks h up and is about to take a reference; refs == 1 (only the
//     cache's).
//  2. G2 unlists h and drops the cache's reference: refs 1 → 0, so G2
//     closes descriptor 7.
//  3. G3 misses on another file; open returns descriptor 7 again.
//  4. G1 increments refs 0 → 1 and serves h: it sends G3's file under h's
//     Size and ETag.
//
// In this package steps 1 and 2 cannot interleave as drawn, because lookup
// and reference happen under c.mu and the cache's reference is dropped only
// after unlisting under c.mu. The compare-and-swap keeps the rule local to
// the Handle: it stays correct if the lookup ever leaves the lock, and it
// turns an entry whose count a double Release drove to zero into a miss
// instead of a read through a reused descriptor.
func (h *Handle) tryRef() bool {
	for {
		n := h.refs.Load()
		if n <= 0 {
			return false
		}
		if h.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// dropCacheRef releases the reference the cache held while it listed h. It
// refuses at zero like tryRef: if a caller's extra Release already closed the
// descriptor, the cache must not count below zero or close twice.
func (h *Handle) dropCacheRef() {
	for {
		n := h.refs.Load()
		if n <= 0 {
			return
		}
		if h.refs.CompareAndSwap(n, n-1) {
			if n == 1 {
				h.close()
			}
			return
		}
	}
}

// close closes the descriptor and gives the inline bytes back to the
// budget. Its error is not reported: the file was opened read-only, so
// close has no data to lose, and by now no caller is left to tell.
func (h *Handle) close() {
	_ = h.File.Close()
	h.openFiles.Add(-1)
	if h.inlineBytes != nil {
		h.inlineBytes.Add(-int64(len(h.Bytes)))
		h.inlineFiles.Add(-1)
	}
	h.dropEncoded()
}

// sameFile reports whether fi, from stat of the path, still describes the
// file h has open: same size, mtime, device, inode and ctime. ctime counts
// because a write in place can keep size and mtime (cp --preserve onto the
// file restores the mtime) while the bytes change, and an inlined entry
// would otherwise serve the old bytes for good; ctime cannot be set back.
// Without a *syscall.Stat_t (a fake Stat in tests) only size and mtime are
// compared.
func (h *Handle) sameFile(fi fs.FileInfo) bool {
	if fi.Size() != h.Size || !fi.ModTime().Equal(h.ModTime) || !fi.Mode().IsRegular() {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev) == h.dev && uint64(st.Ino) == h.Inode && ctimeOf(st) == h.ctime
	}
	return true
}

// newHandle fstats f and wraps it. On error f is left open for the caller
// to close. The reference count starts at zero: the caller sets it before
// publishing the Handle.
func newHandle(name string, f *os.File, openFiles *atomic.Int64, now int64) (*Handle, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: name, Err: err}
	}
	fd := -1
	if err := rc.Control(func(sysfd uintptr) { fd = int(sysfd) }); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: name, Err: err}
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch {
	case fi.IsDir():
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrIsDir}
	case !fi.Mode().IsRegular():
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, &fs.PathError{Op: "fstat", Path: name, Err: fmt.Errorf("no stat_t in %T", fi.Sys())}
	}
	h := &Handle{
		Name:         name,
		File:         f,
		Size:         fi.Size(),
		ModTime:      fi.ModTime(),
		ETag:         ETag(fi.Size(), fi.ModTime()),
		LastModified: fi.ModTime().UTC().Format(httpDate),
		Inode:        uint64(st.Ino),
		fd:           fd,
		dev:          uint64(st.Dev),
		ctime:        ctimeOf(st),
		openFiles:    openFiles,
	}
	h.checked.Store(now)
	return h, nil
}

// httpDate is the IMF-fixdate layout of RFC 9110 §5.6.7 (net/http's
// TimeFormat, spelled here so the cache need not import net/http).
const httpDate = "Mon, 02 Jan 2006 15:04:05 GMT"

// ETag returns the strong entity tag segorigin sends for a file of this size
// and modification time: `"<size hex>-<mtime unix nanoseconds hex>"`. It
// leaves out the inode on purpose, so several origins holding copies of the
// same files give a CDN the same validators.
func ETag(size int64, mtime time.Time) string {
	b := make([]byte, 0, 2+16+1+16)
	b = append(b, '"')
	b = strconv.AppendUint(b, uint64(size), 16)
	b = append(b, '-')
	b = strconv.AppendUint(b, uint64(mtime.UnixNano()), 16)
	b = append(b, '"')
	return string(b)
}
