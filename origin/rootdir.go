package origin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// rootDir is the media root as it is served now: the directory cfg.Root
// named when it was last resolved, held open. A root that is a symlink
// swapped to another release (the deploy tools' "current -> releases/N")
// or a directory made again at the same path is resolved again by the
// root check (followRootLocked), which replaces the whole value at once.
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

// rootNow is the root requests are served from.
func (s *Server) rootNow() *rootDir { return s.rootDir.Load() }

// inRoot runs op on the root served now. followRootLocked closes the root it
// replaces; an op that loaded it just before gets os.ErrClosed, and runs
// once more on the new one (stored before the old one is closed).
func inRoot[T any](s *Server, op func(*rootDir) (T, error)) (T, *rootDir, error) {
	rt := s.rootNow()
	v, err := op(rt)
	if errors.Is(err, os.ErrClosed) {
		rt = s.rootNow()
		v, err = op(rt)
	}
	return v, rt, err
}

// openIn opens name (slash-separated, relative) under rt with flags:
// confined by os.Root, or, with FollowSymlinks, by path from the root's
// real path so that symlinks may lead out of it. joined is that path.
func (s *Server) openIn(rt *rootDir, name string, flags int) (f *os.File, joined string, err error) {
	joined = filepath.Join(rt.real, filepath.FromSlash(name))
	if s.cfg.FollowSymlinks {
		f, err = os.OpenFile(joined, flags, 0)
	} else {
		f, err = rt.dir.OpenFile(filepath.FromSlash(name), flags, 0)
	}
	return f, joined, err
}

// statIn is openIn's stat.
func (s *Server) statIn(rt *rootDir, name string) (fs.FileInfo, error) {
	if s.cfg.FollowSymlinks {
		return os.Stat(filepath.Join(rt.real, filepath.FromSlash(name)))
	}
	return rt.dir.Stat(filepath.FromSlash(name))
}

// followRootLocked makes the directory cfg.Root names now (now: its os.Stat)
// the one served, when it is another than the one held: a symlinked root
// swapped to another release, or a directory made again at the path. The
// new root is stored before anything is invalidated, so an open that
// used the old one is in flight when the cache invalidates and is not
// listed (the cache's rule 4); then the watcher is moved to the new tree
// and the old root closed. The caller holds rootMu (probeRoot), which
// serialises swaps; requests never wait for it.
func (s *Server) followRootLocked(now fs.FileInfo) error {
	old := s.rootNow()
	held, err := old.dir.Stat(".")
	if err == nil && os.SameFile(now, held) {
		return nil
	}
	nr, err := openRootDir(s.cfg.Root)
	if err != nil {
		return fmt.Errorf("%s: %w", s.cfg.Root, err)
	}
	s.rootDir.Store(nr)
	invalidator{s}.InvalidateAll()
	if s.watch != nil {
		s.watch.Reroot()
	}
	old.dir.Close() // opens still using it retry on the new one (inRoot)
	s.stats.RootChanges.Add(1)
	s.log.Info("media root names another directory: serving it", "root", s.cfg.Root, "was", old.real, "now", nr.real)
	return nil
}
