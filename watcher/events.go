package watcher

import (
	"os"
	"strings"

	"github.com/fsnotify/fsnotify"
)

// handle maps one fsnotify event to invalidations and watch changes. An
// event may carry several operations; each is handled.
func (w *Watcher) handle(ev fsnotify.Event) {
	w.stats.events.Add(1)
	if ev.Name != w.root && !strings.HasPrefix(ev.Name, w.prefix) {
		return // not below the root: no watch reports such names
	}
	name := w.rel(ev.Name)
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		w.gone(name)
	}
	if ev.Has(fsnotify.Create) {
		w.created(name)
	}
	if ev.Has(fsnotify.Write) || ev.Has(fsnotify.Chmod) {
		w.changed(name)
	}
	if ev.Has(fsnotify.Write) && w.onWrite != nil {
		if _, isDir := w.dirs[name]; !isDir {
			w.onWrite(name)
		}
	}
}

// gone handles a name that was removed or renamed away.
func (w *Watcher) gone(name string) {
	if name == "" {
		w.forget("")
		w.stats.errors.Add(1)
		w.degrade("media root removed or renamed", nil)
		return
	}
	if _, isLink := w.links[name]; isLink {
		// Every name below a symlinked directory was reached through it.
		delete(w.links, name)
		w.invalidatePrefix(name)
		return
	}
	_, isDir := w.dirs[name]
	if !isDir && !w.degraded {
		// Whole watch set: every directory is in w.dirs and every symlink
		// in w.links, so this was a file. Degraded, an unwatched directory
		// could be gone, so the prefix is dropped instead.
		w.invalidate(name)
		return
	}
	w.forget(name)
	w.invalidatePrefix(name)
	// The kernel queues a rename's MOVED_FROM before anything can be created
	// at the old name, so a directory there now is new: watch it. This is
	// insurance, as its own Create event follows.
	if fi, err := os.Lstat(w.abs(name)); err == nil && fi.IsDir() {
		w.addTree(name)
	}
}

// created handles a name that appeared: created, or renamed in (including
// the second half of an atomic replace).
func (w *Watcher) created(name string) {
	fi, err := os.Lstat(w.abs(name))
	switch {
	case err == nil && fi.Mode()&os.ModeSymlink != 0:
		// A symlink made, or renamed over another (a release swapped by
		// "ln -s new tmp && mv -T tmp name"): everything reached through
		// the name may now be another file. Its target is not watched.
		w.links[name] = struct{}{}
		w.invalidatePrefix(name)
	case err != nil || !fi.IsDir():
		// A file, or already gone again.
		w.invalidate(name)
	default:
		w.addTree(name)
	}
}

// changed handles a write or a metadata change. A directory's permissions
// decide whether anything below it can be opened, so a watched directory
// drops its prefix.
func (w *Watcher) changed(name string) {
	if _, isDir := w.dirs[name]; isDir {
		w.invalidatePrefix(name)
		return
	}
	w.invalidate(name)
}

func (w *Watcher) invalidate(name string) {
	w.stats.invalidations.Add(1)
	w.target.Invalidate(name)
}

func (w *Watcher) invalidatePrefix(dir string) {
	w.stats.invalidations.Add(1)
	w.target.InvalidatePrefix(dir)
}

func (w *Watcher) invalidateAll() {
	w.stats.invalidations.Add(1)
	w.target.InvalidateAll()
}
