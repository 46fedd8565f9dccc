package origin

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

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

// publisher decides whether a file is published: the settle rule
// (origin/publish) over the file's dates, what the watcher saw written
// lately, and the kernel's word on writers. It counts and logs the answers
// about files still being written. It takes from the server only what it
// needs: the clock, the cache's invalidation, the log and its redaction.
type publisher struct {
	rule     publish.Rule
	writes   publish.Writes // files the watcher saw written lately
	answer   InProgressMode
	now      func() time.Time
	drop     func(name string) // the cache's Invalidate
	count    *atomic.Int64     // Stats.InProgress
	log      *slog.Logger
	loggable func(string) string
	logged   inProgressLog // files in progress, once per file

	ask func(*cache.Handle) (closed, known bool) // closedAsOpened; a test counts the questions
}

func newPublisher(cfg Config, count *atomic.Int64, drop func(string), loggable func(string) string) *publisher {
	p := &publisher{rule: publish.Rule{Settle: cfg.Settle}, answer: cfg.InProgress, now: cfg.Now,
		drop: drop, count: count, log: cfg.Logger, loggable: loggable, ask: closedAsOpened}
	p.logged.limit.Every, p.logged.limit.Now = 10*time.Second, cfg.Now
	return p
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
func (pb *publisher) noteWrite(name string) {
	pb.writes.Note(name, pb.now().UnixNano(), pb.rule.Settle)
	pb.logged.forget(name)
}

// inProgress reports whether h, the file h.Name, last changed
// at changed (its ctime, or the one its content validator was computed
// at when storing the validator moved ctime), may still be being written.
// For a file that settled long ago it makes no system call: h's dates are
// the fstat of its open, and every write since has ended the cache entry
// (the watcher) or will (revalidation); an entry found in progress is
// unlisted at once (check), so no entry opened mid-write is judged by old
// dates later. A file the settle rule holds back (written within -settle)
// is settled at once if the kernel says no process has it open for
// writing (writerOpen): a writer that closed its file is done with it,
// and one that still has it open is not, however long it pauses. So a
// file just opened (opened: a cache miss, once per version) that the rule
// finds settled is published only if the kernel does not say a writer
// still holds it: a writer that paused longer than -settle mid-file has
// not finished. Where the kernel cannot tell (NFS, FUSE, a file this
// process may not lease), the rule alone decides.
func (pb *publisher) inProgress(h *cache.Handle, changed int64, opened bool) bool {
	return pb.writing(h, changed, opened, false)
}

// writing reports whether h, which last changed at changed, may still be
// being written (inProgress). held: the request waited for it to be
// written (a hinted part), so the kernel is asked about writers even
// where the settle rule alone would publish it (-settle 0).
func (pb *publisher) writing(h *cache.Handle, changed int64, opened, held bool) bool {
	now := pb.now().UnixNano()
	f := publish.File{ModTime: h.ModTime.UnixNano(), Ctime: changed}
	seen := pb.writes.Seen(h.Name, now, pb.rule.Settle)
	rule := pb.rule.InProgress(f, seen, now)
	if !rule && !held && (!opened || pb.rule.Settle <= 0) {
		return false
	}
	closed, known := pb.final(h, seen, now)
	if rule && !known {
		return true // the kernel cannot tell: the rule decides
	}
	return known && !closed
}

// finalFor is how long the kernel's word that a handle's file is final
// (closedAsOpened) stands for the requests that follow: a part published
// just now, which every player then fetches at once (500 requests within
// a few milliseconds), costs two fcntl and an fstat once a millisecond,
// not once a request. A writer that opens the file again is seen within
// it, about as late as by a request that asked the kernel just before
// the open and is still sending.
const finalFor = time.Millisecond

// final is closedAsOpened, whose "closed, as opened" is kept with the
// handle (cache.Handle.SetSettled) and stands for finalFor, unless the
// watcher noted a write of the name after it (seen: the last write it
// saw, if lately).
func (pb *publisher) final(h *cache.Handle, seen, now int64) (closed, known bool) {
	if at := h.Settled(); at != 0 && seen < at && now >= at && now-at < int64(finalFor) {
		return true, true
	}
	closed, known = pb.ask(h)
	if closed {
		h.SetSettled(now)
	} else {
		h.SetSettled(0) // a writer now: what was kept no longer stands
	}
	return closed, known
}

// closedAsOpened asks the kernel whether no process holds h's file open
// for writing (writerOpen) and, if none does, whether the file is still as
// h's open found it: a writer that wrote and closed between the open and
// the question left h with a size it no longer has, so h is not the
// finished file (the watcher's events on those writes unlist it). known
// is writerOpen's.
func closedAsOpened(h *cache.Handle) (closed, known bool) {
	open, known := writerOpen(h.Fd())
	if !known || open {
		return false, known
	}
	fi, err := h.File.Stat()
	return err == nil && fi.Size() == h.Size && fi.ModTime().Equal(h.ModTime), true
}

// held is stepPublish's for a file in progress that a request waits for
// (res, not stepSuspend, which leaves everything as it was): it is
// unlisted from the cache, so the request opens it again, at its final
// size, once woken.
func (pb *publisher) held(h *cache.Handle, res stepResult) stepResult {
	if res != stepSuspend {
		pb.drop(h.Name)
	}
	return res
}

// refuse answers a request for h, a file in progress (writing). It is
// unlisted from the cache (the next request opens it again, to judge it
// by its final dates and serve it at its final size). Then either
// uncached: its bytes go out with no-store (-in-progress uncached;
// counted by the caller once its answer is final), or errInProgress,
// counted here: the answer is 503.
func (pb *publisher) refuse(h *cache.Handle) (uncached bool, err error) {
	pb.drop(h.Name)
	if pb.answer == InProgressUncached {
		return true, nil
	}
	pb.counted(h.Name, h.Size)
	return false, errInProgress
}

// counted counts and logs (once per file) an answer about a file still
// being written.
func (pb *publisher) counted(name string, size int64) {
	pb.count.Add(1)
	if pb.logged.first(name) && pb.logged.limit.Allow() {
		pb.log.Info("file still being written: not published until it settles",
			"path", pb.loggable(name), "size", size, "settle", pb.rule.Settle, "answer", string(pb.answer),
			"suppressed", pb.logged.limit.Suppressed())
	}
}
