package watcher

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
)

// rebuild watches the root and every directory below it, then forgets the
// directories it did not find. It returns the first error that leaves the
// watch set incomplete; directories that vanish during the walk are not
// errors (their parent's watch reports them).
func (w *Watcher) rebuild() error {
	seen := make(map[string]struct{}, len(w.dirs))
	clear(w.links) // the walk lists them again
	err := w.walk("", func(rel string, isDir bool) {
		if isDir {
			seen[rel] = struct{}{}
		}
	})
	if err != nil {
		return err
	}
	if _, ok := seen[""]; !ok {
		// The root vanished during the walk, which is not an error for the
		// walk but leaves nothing watched.
		return fmt.Errorf("root %s: %w", w.root, fs.ErrNotExist)
	}
	for rel := range w.dirs {
		if _, ok := seen[rel]; !ok {
			w.unwatch(rel)
		}
	}
	return nil
}

// addTree watches a directory that appeared and everything below it, and
// invalidates every name it finds. The watch on a directory is added before
// its entries are read, so an entry created meanwhile is either read or
// reported by the new watch.
func (w *Watcher) addTree(rel string) {
	err := w.walk(rel, func(name string, _ bool) { w.invalidate(name) })
	if err != nil {
		w.stats.errors.Add(1)
		w.degrade("cannot watch a new directory", err)
	}
}

// walk visits rel and every name below it in lexical order, parents first,
// adding a watch on each directory before reading it. visit sees every file
// name (relative), and every directory once its watch is in place;
// symlinks are names, not directories, and are listed in w.links. Names
// that vanish during the walk are skipped.
func (w *Watcher) walk(rel string, visit func(name string, isDir bool)) error {
	defer func() { w.stats.watchedDirs.Store(int64(len(w.dirs))) }()
	return filepath.WalkDir(w.abs(rel), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if vanished(err) {
				return nil // gone since it was listed: its removal has an event
			}
			return err
		}
		name := w.rel(path)
		if d.Type()&fs.ModeSymlink != 0 {
			w.links[name] = struct{}{}
		}
		if !d.IsDir() {
			visit(name, false)
			return nil
		}
		if err := w.addWatch(path); err != nil {
			if vanished(err) {
				return filepath.SkipDir
			}
			return fmt.Errorf("watch %s: %w", path, err)
		}
		w.dirs[name] = struct{}{}
		visit(name, true)
		return nil
	})
}

// forget drops the watches at and below dir. After a rename the kernel still
// watches the moved directories, but fsnotify would report their events
// under the old names; after a remove the watches are gone already and
// Remove's error says so, which is expected.
func (w *Watcher) forget(dir string) {
	for rel := range w.dirs {
		if under(rel, dir) {
			w.unwatch(rel)
		}
	}
	for rel := range w.links {
		if under(rel, dir) {
			delete(w.links, rel)
		}
	}
	w.stats.watchedDirs.Store(int64(len(w.dirs)))
}

func (w *Watcher) unwatch(rel string) {
	// The error only says the watch was already gone (the kernel drops it
	// with the directory) or never added: either way it is not watched now.
	_ = w.fsw.Remove(w.abs(rel))
	delete(w.dirs, rel)
}

// vanished reports whether err means the path no longer names a directory:
// removed or renamed away, or replaced by a file.
func vanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// under reports whether name is dir or below it; every name is below "".
func under(name, dir string) bool {
	if dir == "" {
		return true
	}
	return strings.HasPrefix(name, dir) && (len(name) == len(dir) || name[len(dir)] == '/')
}

// abs returns the absolute path of a relative name.
func (w *Watcher) abs(rel string) string {
	if rel == "" {
		return w.root
	}
	return w.prefix + filepath.FromSlash(rel)
}

// rel returns the relative slash name of an absolute path under the root.
// fsnotify builds event names from the paths the watcher added, so every
// event name is the root or starts with prefix.
func (w *Watcher) rel(path string) string {
	if path == w.root {
		return ""
	}
	return filepath.ToSlash(strings.TrimPrefix(path, w.prefix))
}
