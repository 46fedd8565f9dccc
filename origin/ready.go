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
// one is served from now on (mediaRoot.followLocked): the check is what bounds how
// long the old tree is served after a swap. /readyz answers 503 while it
// fails. The first
// failure after a success is logged and counted (Stats.RootUnavailable),
// and so is the recovery; repeated failures are not logged again.
func (s *Server) CheckRoot() error { return s.root.check() }

// check is CheckRoot.
func (m *mediaRoot) check() error {
	err := m.probe()
	if err != nil {
		if m.down.CompareAndSwap(false, true) {
			m.unavailable.Add(1)
			m.log.Error("media root unavailable: not ready (/readyz answers 503)", "root", m.path, "err", err)
		}
		return err
	}
	if m.down.CompareAndSwap(true, false) {
		m.log.Info("media root available again: ready", "root", m.path)
	}
	return nil
}

// probe holds mu throughout, so that the root it looks at is not closed
// under it by a concurrent check's swap.
func (m *mediaRoot) probe() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, err := os.Stat(m.path)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: not a directory", m.path)
	}
	if err := m.followLocked(st); err != nil {
		return err
	}
	rt := m.now()
	var dir *os.File
	if m.follow {
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
		return fmt.Errorf("%s: %w", m.path, err)
	}
	if len(names) == 1 {
		if m.follow {
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

// watch runs check every interval until ctx is done, so that a lost root
// is logged and counted, and a swapped one followed, even when nothing
// probes /readyz. Run owns it.
func (m *mediaRoot) watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.check()
		}
	}
}
