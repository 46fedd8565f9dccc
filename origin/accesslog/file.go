package accesslog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// File is an access log that can be re-opened by name after logrotate
// moved it. Writes are one write(2) each on an O_APPEND descriptor, so
// lines from concurrent responses never interleave, and they take no
// lock: Reopen swaps the descriptor, and a write that raced with the
// swap onto the old, now closed, one is retried on the new one.
type File struct {
	path string
	w    atomic.Pointer[os.File] // the current descriptor
	mu   sync.Mutex              // serialises Reopen and Close
	std  bool                    // standard output: never closed or reopened
}

// Open opens path for appending (creating it, mode 0644), or returns
// standard output for "-".
func Open(path string) (*File, error) {
	if path == "-" {
		f := &File{path: path, std: true}
		f.w.Store(os.Stdout)
		return f, nil
	}
	fd, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	f := &File{path: path}
	f.w.Store(fd)
	return f, nil
}

func openAppend(path string) (*os.File, error) {
	fd, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("access log: %w", err)
	}
	return fd, nil
}

// Write writes p, one line, with a single write(2).
func (f *File) Write(p []byte) (int, error) {
	for {
		fd := f.w.Load()
		if fd == nil {
			return 0, os.ErrClosed
		}
		n, err := fd.Write(p)
		if errors.Is(err, os.ErrClosed) && n == 0 && f.w.Load() != fd {
			continue // Reopen closed fd under us: the line goes to the new file
		}
		return n, err
	}
}

// Reopen opens the path anew and moves writes to it, then closes the old
// descriptor: what logrotate's "create" mode wants after it renamed the
// file. If the open fails, writes stay on the old descriptor.
func (f *File) Reopen() error {
	if f.std {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.w.Load() == nil {
		return os.ErrClosed
	}
	fd, err := openAppend(f.path)
	if err != nil {
		return err
	}
	return f.w.Swap(fd).Close()
}

// Close closes the file; later writes fail with os.ErrClosed.
func (f *File) Close() error {
	if f.std {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if fd := f.w.Swap(nil); fd != nil {
		return fd.Close()
	}
	return nil
}

// Path returns the name Open was given.
func (f *File) Path() string { return f.path }

var _ io.Writer = (*File)(nil)
