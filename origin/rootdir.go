package origin

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// rootDir is the media root as it is served now: the directory cfg.Root
// named when it was last resolved, held open. A root that is a symlink
// swapped to another release (the deploy tools' "current -> releases/N")
// or a directory made again at the same path is resolved again by the
// root check (mediaRoot.followLocked), which replaces the whole value at once.
type rootDir struct {
	dir  *os.Root // confines opens to the root (symlinks included)
	real string   // the directory's path with every symlink resolved: what hiddenTarget measures against, and the base of opens with FollowSymlinks
}

// openRootDir resolves path and opens the directory it names. The
// directory is opened by its resolved path, so dir and real name the same
// directory even if a link on path is swapped meanwhile.
func openRootDir(path string) (*rootDir, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	dir, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	return &rootDir{dir: dir, real: real}, nil
}

// mediaRoot is the directory the server serves from: the root held open
// (swapped when the path comes to name another directory), every open and
// stat of a served name under it, the bound on those in progress, and the
// checks that say whether it can be served (readiness, ready.go). It takes
// from the server only what it needs: the settings, the log, two counters
// and what to do when the root is swapped.
type mediaRoot struct {
	path     string // cfg.Root, absolute
	follow   bool   // -follow-symlinks: opens by path from the root's real path
	dotfiles bool   // -serve-dotfiles: no check of the opened file's real path
	cur      atomic.Pointer[rootDir]
	mu       sync.Mutex  // serialises checks and swaps (probe)
	down     atomic.Bool // the last check failed

	// opens bounds opens and stats in progress (cache misses and
	// revalidations) to cfg.ColdReaders when the cold path is on: on slow
	// storage they block their thread too, and a burst of misses must not
	// grow the thread count. nil: unbounded. A turn is waited for at most
	// deadline.
	opens    chan struct{}
	deadline time.Duration

	log         *slog.Logger
	unavailable *atomic.Int64 // Stats.RootUnavailable
	changes     *atomic.Int64 // Stats.RootChanges
	swapped     func()        // the path names another directory now: what was cached of the old one goes
}

func newMediaRoot(cfg Config, rt *rootDir, st *counters, swapped func()) *mediaRoot {
	m := &mediaRoot{path: cfg.Root, follow: cfg.FollowSymlinks, dotfiles: cfg.ServeDotfiles, deadline: cfg.ColdDeadline,
		log: cfg.Logger, unavailable: &st.RootUnavailable, changes: &st.RootChanges, swapped: swapped}
	m.cur.Store(rt)
	return m
}

// now is the root requests are served from.
func (m *mediaRoot) now() *rootDir { return m.cur.Load() }

// close closes the root served now.
func (m *mediaRoot) close() error { return m.now().dir.Close() }

// inRoot runs op on the root served now. followLocked closes the root it
// replaces; an op that loaded it just before gets os.ErrClosed, and runs
// once more on the new one (stored before the old one is closed).
func inRoot[T any](m *mediaRoot, op func(*rootDir) (T, error)) (T, *rootDir, error) {
	rt := m.now()
	v, err := op(rt)
	if errors.Is(err, os.ErrClosed) {
		rt = m.now()
		v, err = op(rt)
	}
	return v, rt, err
}

// open opens a cache key under the root (the cache's Open). Without
// -follow-symlinks, os.Root refuses any path, symlinks included, that
// resolves outside the root.
func (m *mediaRoot) open(name string) (*os.File, error) {
	if name == "" {
		name = "."
	}
	// O_NONBLOCK: opening a FIFO for reading would otherwise block until a
	// writer appears; with it the open returns and the cache refuses the
	// FIFO as not a regular file. Regular files ignore the flag.
	const flags = os.O_RDONLY | syscall.O_NONBLOCK
	if err := m.takeOpen(name); err != nil {
		return nil, err
	}
	defer m.giveOpen()
	var joined string
	f, rt, err := inRoot(m, func(rt *rootDir) (f *os.File, err error) { f, joined, err = m.openIn(rt, name, flags); return })
	if err != nil || m.dotfiles {
		return f, err
	}
	// The route refused a hidden name; a symlink with a plain name may
	// still lead to one. Checked on the opened file, not the name.
	real, err := realPath(f, joined)
	if err != nil {
		f.Close()
		return nil, err
	}
	if hiddenTarget(rt.real, real) {
		f.Close()
		return nil, errHiddenTarget
	}
	return f, nil
}

// stat is open's stat (the cache's Stat, for revalidation).
func (m *mediaRoot) stat(name string) (fs.FileInfo, error) {
	if name == "" {
		name = "."
	}
	if err := m.takeOpen(name); err != nil {
		return nil, err
	}
	defer m.giveOpen()
	fi, _, err := inRoot(m, func(rt *rootDir) (fs.FileInfo, error) { return m.statIn(rt, name) })
	return fi, err
}

// errOpenWait: an open or stat waited -cold-deadline for its turn (the
// opens in progress all hung on storage). Answered 503 with Retry-After.
var errOpenWait = errors.New("origin: waited too long for a turn to open")

// takeOpen takes a turn among the opens in progress, waiting at most the
// deadline; giveOpen gives it back.
func (m *mediaRoot) takeOpen(name string) error {
	if m.opens == nil {
		return nil
	}
	select {
	case m.opens <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(m.deadline)
	defer t.Stop()
	select {
	case m.opens <- struct{}{}:
		return nil
	case <-t.C:
		return &fs.PathError{Op: "open", Path: name, Err: errOpenWait}
	}
}

func (m *mediaRoot) giveOpen() {
	if m.opens != nil {
		<-m.opens
	}
}

// openIn opens name (slash-separated, relative) under rt with flags:
// confined by os.Root, or, with FollowSymlinks, by path from the root's
// real path so that symlinks may lead out of it. joined is that path.
func (m *mediaRoot) openIn(rt *rootDir, name string, flags int) (f *os.File, joined string, err error) {
	joined = filepath.Join(rt.real, filepath.FromSlash(name))
	if m.follow {
		f, err = os.OpenFile(joined, flags, 0)
	} else {
		f, err = rt.dir.OpenFile(filepath.FromSlash(name), flags, 0)
	}
	return f, joined, err
}

// statIn is openIn's stat.
func (m *mediaRoot) statIn(rt *rootDir, name string) (fs.FileInfo, error) {
	if m.follow {
		return os.Stat(filepath.Join(rt.real, filepath.FromSlash(name)))
	}
	return rt.dir.Stat(filepath.FromSlash(name))
}

// followLocked makes the directory the root's path names now (now: its
// os.Stat) the one served, when it is another than the one held: a
// symlinked root swapped to another release, or a directory made again at
// the path. The new root is stored before anything is invalidated, so an
// open that used the old one is in flight when the cache invalidates and
// is not listed (the cache's rule 4); then swapped (the cache and the
// watcher follow) and the old root closed. The caller holds mu (probe),
// which serialises swaps; requests never wait for it.
func (m *mediaRoot) followLocked(now fs.FileInfo) error {
	old := m.now()
	held, err := old.dir.Stat(".")
	if err == nil && os.SameFile(now, held) {
		return nil
	}
	nr, err := openRootDir(m.path)
	if err != nil {
		return fmt.Errorf("%s: %w", m.path, err)
	}
	m.cur.Store(nr)
	m.swapped()
	old.dir.Close() // opens still using it retry on the new one (inRoot)
	m.changes.Add(1)
	m.log.Info("media root names another directory: serving it", "root", m.path, "was", old.real, "now", nr.real)
	return nil
}
