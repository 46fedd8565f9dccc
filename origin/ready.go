package origin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// CheckRoot reports whether the media root can be served: the path names a
// readable directory. When it names another directory than the one served
// (a symlinked root swapped to another release, a root made again), that
// one is served from now on (followRootLocked): the check is what bounds how
// long the old tree is served after a swap. /readyz answers 503 while it
// fails. The first
// failure after a success is logged and counted (Stats.RootUnavailable),
// and so is the recovery; repeated failures are not logged again.
func (s *Server) CheckRoot() error {
	err := s.probeRoot()
	if err != nil {
		if s.rootDown.CompareAndSwap(false, true) {
			s.stats.RootUnavailable.Add(1)
			s.log.Error("media root unavailable: not ready (/readyz answers 503)", "root", s.cfg.Root, "err", err)
		}
		return err
	}
	if s.rootDown.CompareAndSwap(true, false) {
		s.log.Info("media root available again: ready", "root", s.cfg.Root)
	}
	return nil
}

// RootAvailable reports what the last CheckRoot found.
func (s *Server) RootAvailable() bool { return !s.rootDown.Load() }

// probeRoot holds rootMu throughout, so that the root it looks at is not
// closed under it by a concurrent check's swap.
func (s *Server) probeRoot() error {
	s.rootMu.Lock()
	defer s.rootMu.Unlock()
	st, err := os.Stat(s.cfg.Root)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: not a directory", s.cfg.Root)
	}
	if err := s.followRootLocked(st); err != nil {
		return err
	}
	rt := s.rootNow()
	var dir *os.File
	if s.cfg.FollowSymlinks {
		dir, err = os.Open(rt.real)
	} else {
		dir, err = rt.dir.Open(".")
	}
	if err != nil {
		return err
	}
	defer dir.Close()
	// Listing needs read permission, and opening anything under it (every
	// GET) search permission: list one name and look it up. An empty root
	// has nothing to look up, and nothing to serve either way.
	names, err := dir.Readdirnames(1)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w", s.cfg.Root, err)
	}
	if len(names) == 1 {
		if s.cfg.FollowSymlinks {
			_, err = os.Lstat(filepath.Join(rt.real, names[0]))
		} else {
			_, err = rt.dir.Lstat(names[0])
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) { // removed since the listing: fine
			return err
		}
	}
	return nil
}

// watchRoot runs CheckRoot every interval until ctx is done, so that a lost
// root is logged and counted even when nothing probes /readyz. Run owns it.
func (s *Server) watchRoot(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.CheckRoot()
		}
	}
}
