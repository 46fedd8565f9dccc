package origin

import (
	"errors"
	"sync"

	"github.com/valyala/fasthttp"

	"segorigin/cache"
	"segorigin/origin/publish"
)

// errInProgress: the file is still being written (publish.Rule). Answered
// 503 with Retry-After and Cache-Control: no-store.
var errInProgress = errors.New("origin: file still being written")

// valNoStore is the Cache-Control of every answer about a file in
// progress, whatever -cache-control-server-error says: a cache must keep
// neither a refusal nor a part of the file.
var valNoStore = []byte("no-store")

// maxLoggedInProgress bounds the names inProgressLog remembers having
// logged; past it the set starts over (a name may then be logged again).
const maxLoggedInProgress = 4096

// inProgressLog logs a file in progress once per file, and no more than
// one line per interval across files.
type inProgressLog struct {
	limit rateLimitedLog
	mu    sync.Mutex          // protects seen
	seen  map[string]struct{} // names logged since the set last started over
}

// first reports whether name has not been logged yet (and marks it).
func (l *inProgressLog) first(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[name]; ok {
		return false
	}
	if l.seen == nil || len(l.seen) >= maxLoggedInProgress {
		l.seen = make(map[string]struct{})
	}
	l.seen[name] = struct{}{}
	return true
}

// forget lets name be logged again (it settled, or changed again).
func (l *inProgressLog) forget(name string) {
	l.mu.Lock()
	delete(l.seen, name)
	l.mu.Unlock()
}

// noteWrite is the watcher's OnWrite: the file at name was just written.
//
// The end of a write is judged by time, not by inotify's IN_CLOSE_WRITE:
// fsnotify keeps that event unexported (xUnportableCloseWrite), and a
// second inotify instance beside it (golang.org/x/sys/unix) would have
// to mirror every directory watch for one case only: a writer that stops
// for longer than -settle in the middle of a file and then goes on.
// Packagers, cp, rsync and scp write without such pauses, and a close is
// no proof of completeness either (a writer may reopen to append).
func (s *Server) noteWrite(name string) {
	s.writes.Note(name, s.cfg.Now().UnixNano(), s.cfg.Settle)
	s.inProgressLog.forget(name)
}

// inProgress reports whether h, the file h.Name, last changed
// at changed (its ctime, or the one its content validator was computed
// at when storing the validator moved ctime), may still be being written.
// For a file that settled long ago it makes no system call: h's dates are
// the fstat of its open, and every write since has ended the cache entry
// (the watcher) or will (revalidation); an entry found in progress is
// unlisted at once (checkInProgress), so no entry opened mid-write is
// judged by old dates later. A file the settle rule holds back (written
// within -settle) is settled at once if the kernel says no process has
// it open for writing (writerOpen): a writer that closed its file is done
// with it, and one that still has it open is not, however long it pauses.
func (s *Server) inProgress(h *cache.Handle, changed int64) bool {
	now := s.cfg.Now().UnixNano()
	f := publish.File{ModTime: h.ModTime.UnixNano(), Ctime: changed}
	if !s.publish.InProgress(f, s.writes.Seen(h.Name, now, s.cfg.Settle), now) {
		return false
	}
	if open, known := writerOpen(h.Fd()); known {
		return open
	}
	return true
}

// checkInProgress applies the settle rule to a request for p.h. true:
// ctx holds the answer (503); it is final, and counted. Otherwise, when
// the file is in progress and -in-progress uncached sends its bytes with
// no-store, p.inProgress records it, counted once the plan is final.
func (s *Server) checkInProgress(ctx *fasthttp.RequestCtx, p *plan) bool {
	h := p.h
	if !s.inProgress(h, p.changed) {
		return false
	}
	// Reopened by the next request, so that the settled file is judged by
	// its final dates and served at its final size.
	s.cache.Invalidate(h.Name)
	if s.cfg.InProgress == InProgressUncached {
		p.inProgress, p.inProgressSize = true, h.Size
		return false
	}
	s.countInProgress(h.Name, h.Size)
	s.fail(ctx, errInProgress)
	ctx.Response.Header.SetCanonical(hdrCacheControl, valNoStore)
	return true
}

// countInProgress counts and logs (once per file) an answer about a file
// still being written.
func (s *Server) countInProgress(name string, size int64) {
	s.stats.InProgress.Add(1)
	if s.inProgressLog.first(name) && s.inProgressLog.limit.Allow() {
		s.log.Info("file still being written: not published until it settles",
			"path", s.loggable(name), "size", size, "settle", s.cfg.Settle, "answer", string(s.cfg.InProgress),
			"suppressed", s.inProgressLog.limit.Suppressed())
	}
}
