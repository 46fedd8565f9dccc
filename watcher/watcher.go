package watcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Invalidator is what the watcher drives; *cache.Cache implements it. Names
// and directories are slash paths relative to the root, without a leading
// slash; "" is the root.
type Invalidator interface {
	Invalidate(name string)      // name may have changed
	InvalidatePrefix(dir string) // dir and everything below it may have changed
	InvalidateAll()              // anything may have changed
}

// Config configures a Watcher. It is validated once by New.
type Config struct {
	// Root is the media root directory, absolute or relative to the working
	// directory. Required.
	Root string

	// Target receives the invalidations. Required.
	Target Invalidator

	// Logger receives the degraded and recovered messages. nil means
	// slog.Default().
	Logger *slog.Logger

	// OnDegraded, if set, is called with true when the watch set becomes
	// incomplete (event overflow, the inotify watch limit, another error)
	// and with false when it is whole again; use it to switch the cache's
	// revalidation on and off. It is called from New or from Run's
	// goroutine, never concurrently, and must not block.
	OnDegraded func(degraded bool)

	// OnWrite, if set, is called with the name of a file the kernel
	// reports written (IN_MODIFY), after its invalidation, so the caller
	// can tell a file being written from a finished one. It is called from
	// Run's goroutine and must not block.
	OnWrite func(name string)

	// RetryEvery is how often a degraded watcher tries to rebuild the full
	// watch set. 0 means 2s.
	RetryEvery time.Duration
}

const defaultRetryEvery = 2 * time.Second

// Watcher watches a media root. Create it with New and run it with Run.
type Watcher struct {
	path       string // Config.Root made absolute, symlinks kept: what Reroot resolves again
	root       string // path with its symlinks resolved when last resolved
	prefix     string // root with a trailing slash, to cut event names
	target     Invalidator
	log        *slog.Logger
	onDegraded func(bool)
	onWrite    func(string)
	retryEvery time.Duration

	fsw *fsnotify.Watcher
	// addWatch adds a watch on an absolute directory path: fsw.Add, which
	// tests wrap to fail with ENOSPC.
	addWatch func(path string) error

	// reroot asks Run's goroutine to resolve path again (Reroot); buffered
	// so that asking never blocks and many asks make one.
	reroot chan struct{}

	// root, prefix, dirs, links and degraded belong to the goroutine
	// running New, then to the one running Run; they are never touched
	// concurrently.
	dirs     map[string]struct{} // watched directories, relative ("" is the root)
	links    map[string]struct{} // symlinks below the root, relative: their events drop a prefix
	degraded bool                // the watch set is incomplete or events were lost

	stats counters
}

// New validates cfg, creates the fsnotify watcher and watches the root and
// every directory below it. If a watch below the root cannot be added the
// watcher starts degraded (OnDegraded(true) is called before New returns).
// The caller must then call Run, or Close if it never will.
func New(cfg Config) (*Watcher, error) {
	return newWatcher(cfg, nil)
}

// newWatcher is New; wrapAdd, if non-nil, wraps fsnotify's Add so tests can
// make it fail.
func newWatcher(cfg Config, wrapAdd func(add func(string) error) func(string) error) (*Watcher, error) {
	switch {
	case cfg.Root == "":
		return nil, errors.New("watcher: Root is required")
	case cfg.Target == nil:
		return nil, errors.New("watcher: Target is required")
	case cfg.RetryEvery < 0:
		return nil, fmt.Errorf("watcher: RetryEvery %v is negative", cfg.RetryEvery)
	}
	path, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("watcher: root: %w", err)
	}
	root, err := resolveRoot(path)
	if err != nil {
		return nil, err
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watcher: %w", err)
	}
	w := &Watcher{
		path:       path,
		root:       root,
		prefix:     strings.TrimSuffix(root, "/") + "/",
		reroot:     make(chan struct{}, 1),
		target:     cfg.Target,
		log:        cfg.Logger,
		onDegraded: cfg.OnDegraded,
		onWrite:    cfg.OnWrite,
		retryEvery: cfg.RetryEvery,
		fsw:        fsw,
		addWatch:   fsw.Add,
		dirs:       make(map[string]struct{}),
		links:      make(map[string]struct{}),
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	if w.onDegraded == nil {
		w.onDegraded = func(bool) {}
	}
	if w.retryEvery == 0 {
		w.retryEvery = defaultRetryEvery
	}
	if wrapAdd != nil {
		w.addWatch = wrapAdd(fsw.Add)
	}
	// The root must be watchable; a configuration error should fail here,
	// not degrade. Only the watch limit is left to the retry loop.
	if err := w.addWatch(root); err != nil && !errors.Is(err, syscall.ENOSPC) {
		fsw.Close()
		return nil, fmt.Errorf("watcher: watch %s: %w", root, err)
	}
	if err := w.rebuild(); err != nil {
		w.stats.errors.Add(1)
		w.degrade("cannot watch every directory", err)
	}
	return w, nil
}

// resolveRoot resolves the symlinks of an absolute root, because event
// names carry the path that was watched and the walk below it must see a
// directory, not a link.
func resolveRoot(abs string) (string, error) {
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("watcher: root: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("watcher: root: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("watcher: root %s is not a directory", real)
	}
	return real, nil
}

// Run handles events until ctx is done, then closes the fsnotify watcher
// (ending its reader goroutine) and returns nil. It returns an error only
// if fsnotify closes its channels by itself. Call it once, on a goroutine
// the caller owns.
func (w *Watcher) Run(ctx context.Context) error {
	defer w.fsw.Close()
	// retry fires while degraded; nil (never ready) while whole.
	var retry *time.Timer
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	for {
		var retryC <-chan time.Time
		switch {
		case w.degraded && retry == nil:
			retry = time.NewTimer(w.retryEvery)
			retryC = retry.C
		case w.degraded:
			retryC = retry.C
		case retry != nil:
			retry.Stop()
			retry = nil
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return errors.New("watcher: fsnotify closed its event channel")
			}
			w.handle(ev)
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return errors.New("watcher: fsnotify closed its error channel")
			}
			w.handleError(err)
		case <-retryC:
			w.retry()
			if w.degraded {
				retry.Reset(w.retryEvery)
			}
		case <-w.reroot:
			w.followRoot()
		}
	}
}

// Close closes the fsnotify watcher. It is only needed when Run is never
// called; to stop Run, cancel its context.
func (w *Watcher) Close() error {
	return w.fsw.Close()
}

// handleError reacts to an error from fsnotify. Any of them may mean lost
// events, so each one is treated as such.
func (w *Watcher) handleError(err error) {
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		w.stats.overflows.Add(1)
		w.degrade("event queue overflowed", err)
		return
	}
	w.stats.errors.Add(1)
	w.degrade("fsnotify error", err)
}

// degrade records that events were lost or the watch set is incomplete. It
// invalidates everything every time (whatever changed meanwhile went
// unseen), but reports and logs only the change of state.
func (w *Watcher) degrade(why string, err error) {
	w.invalidateAll()
	if w.degraded {
		return
	}
	w.degraded = true
	w.stats.degraded.Store(true)
	w.log.Warn("watcher degraded: cache revalidates until the watch set is rebuilt",
		"reason", why, "err", err, "root", w.root, "retry_every", w.retryEvery)
	w.onDegraded(true)
}

// retry tries to rebuild the full watch set, on the directory the root's
// path names now; if it succeeds the watcher is whole again.
func (w *Watcher) retry() {
	w.stats.rebuilds.Add(1)
	w.moveRoot()
	if err := w.rebuild(); err != nil {
		return
	}
	// Changes made while degraded were not all seen: forget everything once
	// more, now that every later change will be.
	w.invalidateAll()
	w.degraded = false
	w.stats.degraded.Store(false)
	w.log.Info("watcher whole again", "root", w.root, "dirs", len(w.dirs))
	w.onDegraded(false)
}

// Reroot asks the watcher to resolve the root's path again and, if it now
// names another directory (a root that is a symlink swapped to another
// release, a root made again), to watch that one instead: every watch of
// the old tree is dropped, the new tree is watched, and everything is
// invalidated once the new watch set is in place. It returns at once; Run
// does the work on its goroutine. The caller has usually noticed the
// change itself (the server's root check) and invalidated already; this
// makes the events of the new tree reach it.
func (w *Watcher) Reroot() {
	select {
	case w.reroot <- struct{}{}:
	default: // one is pending: it will resolve the path as it is then
	}
}

// followRoot is Reroot's work on Run's goroutine.
func (w *Watcher) followRoot() {
	if !w.moveRoot() {
		return
	}
	if err := w.rebuild(); err != nil {
		w.stats.errors.Add(1)
		w.degrade("cannot watch the new root", err)
		return
	}
	w.invalidateAll()
	w.log.Info("watcher follows the media root to another directory", "root", w.root, "dirs", len(w.dirs))
}

// moveRoot resolves the root's path and, when it names another directory
// than the one watched, forgets every watch of the old one and makes the
// new one the root (rebuild then watches it). It reports whether it moved.
// A path that does not resolve now leaves everything as it is: the walk
// reports the root missing.
func (w *Watcher) moveRoot() bool {
	real, err := resolveRoot(w.path)
	if err != nil || real == w.root {
		return false
	}
	w.forget("")
	w.links = make(map[string]struct{})
	w.root, w.prefix = real, strings.TrimSuffix(real, "/")+"/"
	return true
}
